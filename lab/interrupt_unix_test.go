//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestHeadlessInterrupted: Ctrl-C (a SIGINT to the lab) once the grader is built stops what
// plays: nothing more is played, the command's error is a childExit with status 130, and closing
// the player removes the build and says so. The signal comes before the cells are asked for, so
// what it holds does not depend on how fast they play. Unix only: on Windows no process sends a
// signal to itself (the console sends Ctrl-C), and syscall.Kill is not there.
func TestHeadlessInterrupted(t *testing.T) {
	var stderr bytes.Buffer
	pl, err := newPlayer("", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.close()
	if pl.gr == nil {
		t.Fatal("the embedded backend plays in this process, with no grader built")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	st, _ := catalog.Find("08")
	deadline := time.Now().Add(time.Minute) // the signal's delivery, not a verdict, waits on this
	for {
		ps, err := pl.cells(st, []steps.Scenario{steps.Slow})
		var child *childExit
		if errors.As(err, &child) && child.code == 130 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after SIGINT the grader still plays: %v, %v", ps, err)
		}
	}
	tmp := pl.gr.tmp
	pl.close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the grader's build is still there: %v", err)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say it was interrupted: %q", stderr.String())
	}
}
