package main

import "io"

func tuiCmd(args []string, stdout, stderr io.Writer) error { return usageError("tui not built yet") }
