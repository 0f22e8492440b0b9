package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if inGrader != nil { // run as a learner's grader (ingrader_test.go), as the grader's own binary runs
		os.Exit(m.Run())
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	waitersInParallel()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"),
		goleak.Cleanup(func(code int) {
			if buildDir != "" {
				os.RemoveAll(buildDir)
			}
			forgetBuilds()
			forgetSharedFolders()
			os.Exit(code) // goleak's own exit: a Cleanup that returns passes a leak in silence
		}))
}

// waitersInParallel lets twice as many parallel tests run at once as go test would (-parallel,
// whose default is GOMAXPROCS), unless -parallel is given. This package's parallel tests spend
// most of their time waiting, not computing: on a real terminal in tmux, on a browser, on a
// redis-server's wall clock, or on a grader or explorer binary (a process of its own, which the
// go test -parallel count does not see). With one test per core, two tmux tests waiting on a
// screen held both slots of a two-core machine while the CPU idled (go test ./lab: 295 s, its
// CPU 1.1 cores on average on 2; with 4 at once: 201 s, the same machine and load).
func waitersInParallel() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(max(4, 2*runtime.GOMAXPROCS(0))))
	}
}

// TestTUIFlags checks -h and bad flags.
func TestTUIFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-h"}, &out, &errb); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errb.String(), "-speed") {
		t.Fatalf("-h: %v\n%s", err, errb.String())
	}
	for _, args := range [][]string{{"-nope"}, {"-speed", "0"}, {"-speed", "x"}, {"-buyers", "51"}, {"-redis", "bogus"}, {"extra"}} {
		err := run(args, &out, &errb)
		if !errors.Is(err, errUsage) || strings.Contains(unwrapUsage(err), "\n") {
			t.Errorf("%v: want a one-line usage error, got %v", args, err)
		}
	}
}
