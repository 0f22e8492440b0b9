package lock

import "embed"

// Source is this step's own code, for the lab's code pane.
//
//go:embed lock.go order.go unlock.lua
var Source embed.FS
