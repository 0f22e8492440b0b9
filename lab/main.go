// Command lab is lockstep's front door: with no arguments it opens the terminal lab, where a
// learner picks a step and breaks it; "run" plays one scenario headless and "matrix" plays them
// all.
//
//	go run ./lab                                  the terminal lab
//	go run ./lab run -step 04 -scenario slow      one scenario, its report in words (-json)
//	go run ./lab matrix                           the steps × scenarios table (-json)
//	go run ./lab list steps|scenarios|kinds       the names, one per line, for scripts
//	go run ./lab judge runs.json                  judge saved runs again, offline (run/matrix -save)
//	go run ./lab grade steps/mine                 your own lock against every scenario (see grade.go)
//	go run ./lab explore 13                       random programs of faults until one breaks it, shrunk
//	go run ./lab drive 05 -moves "1 1 w 1"        drive mode headless: you schedule each command (-solve)
//	go run ./lab -dir steps/mine                  the terminal lab, your lock as the picker's last line
//	go run ./lab -program found.json              the terminal lab on a program explore -save found
//	go run ./lab class alice.json bob.json        a room's saved grades in one table (grade -name -save)
//	go run ./lab serve                            the lab for a whole room over SSH (lab/serve)
//	go run ./lab version                          the lab's version and commit (-version too)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/lockstep-lab/lockstep/lab/grading"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
)

// errUsage marks an error caused by bad input: exit status 2.
var errUsage = grading.ErrUsage

func main() {
	defer redisenv.CloseAll()
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil {
		redisenv.CloseAll()
	}
	if code := exitCode(err); code != 0 {
		var child *childExit
		if !errors.As(err, &child) { // a lab built by grade has said why already
			fmt.Fprintln(os.Stderr, "lab:", unwrapUsage(err))
		}
		os.Exit(code)
	}
}

// exitCode is the exit status for what run returned: 0 for success or -h, 2 for bad input, the
// status of a lab built by grade, 1 for anything else.
func exitCode(err error) int {
	var child *childExit
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errTwoStories):
		return 3
	case errors.As(err, &child):
		return child.code
	}
	return 1
}

// run dispatches the command line.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return runCmd(args[1:], stdout, stderr)
		case "matrix":
			return matrixCmd(args[1:], stdout, stderr)
		case "list":
			return listCmd(args[1:], stdout)
		case "grade":
			return gradeCmd(args[1:], stdout, stderr)
		case "judge":
			return judgeCmd(args[1:], stdout, stderr)
		case "explore":
			return exploreCmd(args[1:], stdout, stderr)
		case "drive":
			return driveCmd(args[1:], stdout, stderr)
		case "class":
			return classCmd(args[1:], stdout, stderr)
		case "serve":
			return serveCmd(args[1:], stdout, stderr)
		case "version", "-version", "--version":
			return versionCmd(args[1:], stdout, stderr)
		case "help":
			return run([]string{"-h"}, stdout, stderr)
		}
	}
	if dir, nodes, rest, ok, err := dirFlag(args); err != nil || ok {
		if err != nil {
			return err
		}
		return dirCmd(dir, nodes, rest, stdout, stderr)
	}
	return tuiCmd(args, stdout, stderr)
}

// usageError wraps a message as bad input.
func usageError(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
}

func unwrapUsage(err error) string {
	s := err.Error()
	const p = "usage: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// newFlags returns a flag set whose errors are returned, not printed and exited on.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, turning a bad flag into a one-line usage error; an argument left over is one.
func parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q (see -h)", fs.Arg(0))
	}
	return nil
}

// parseFlags parses the flags of args up to the first argument that is not one, turning a bad
// flag into a one-line usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.Usage()
		return err
	case err != nil:
		return usageError("%v (see -h)", err)
	}
	return nil
}

// stopOnSignal makes Ctrl-C (or a SIGTERM) during a headless command stop every Redis the lab
// started and remove its keys before the process exits with status 130, until the returned stop
// is called (when the command returns: its goroutine ends then). Hazard: the terminal lab must not
// use it — Bubble Tea reads Ctrl-C as a key and restores the terminal itself.
func stopOnSignal() (stop func()) {
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(sig, stopSignals...)
	go func() {
		select {
		case <-sig:
			redisenv.CloseAll()
			fmt.Fprintln(os.Stderr, "lab: interrupted; every Redis the lab started is stopped")
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}
