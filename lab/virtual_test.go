package main

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// commandsInProcess guards the package's play, bubble and settle, which the run, matrix and drive
// commands read when they play in this process, and which a test sets (inVirtualTime, inProcess;
// the documentation's test its memo): one test at a time. Hazard: a parallel test that sets or
// reads any of them without it races with another's plays.
var commandsInProcess sync.Mutex

// inVirtualTime makes the cells the headless commands play during t, on the embedded backend,
// play in virtual time: each inside a testing/synctest bubble of t, as the step suites play
// theirs. The lab itself plays on the wall clock (Go has virtual time only under go test); the
// referee's rules are the same on both clocks, and TestBothClocks checks a sample of cells both
// ways. It holds commandsInProcess until t ends: a parallel test that runs commands between other
// work takes it command by command (inProcess).
func inVirtualTime(t *testing.T) {
	t.Helper()
	commandsInProcess.Lock()
	bubble, settle = inBubbles(t), synctest.Wait
	t.Cleanup(func() {
		bubble, settle = nil, nil
		commandsInProcess.Unlock()
	})
}

// inBubbles plays each f it is given in a testing/synctest bubble of t of its own, as the grader
// and the step suites play each cell.
func inBubbles(t *testing.T) matrix.Bubble {
	return func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
}

// inProcess runs f, which runs commands that play in this process, as inVirtualTime would run the
// rest of t, and gives the package's play, bubble and settle back when f returns.
func inProcess(t *testing.T, f func()) {
	t.Helper()
	commandsInProcess.Lock()
	defer commandsInProcess.Unlock()
	bubble, settle = inBubbles(t), synctest.Wait
	defer func() { bubble, settle = nil, nil }()
	f()
}

// TestBothClocks plays a sample of cells on the wall clock and in virtual time: the referee's
// rules do not change with the clock, so each gets the same verdict both ways (and the matrix's).
// The sample covers each clock a verdict rests on: a TTL that runs out, a freeze and a pause, a
// watchdog's timer, a lease guard's, back-off sleeps and the idle share, pub/sub wake-ups, a
// quorum's restart, a fenced write, a skewed clock, and the end-of-run probe of a stuck lock.
func TestBothClocks(t *testing.T) {
	if testing.Short() {
		t.Skip("plays cells on the wall clock; -short skips it")
	}
	for _, c := range []struct{ step, sc string }{
		{"02", "error"}, {"04", "slow"}, {"05", "unlock-race"}, {"08", "pause"},
		{"10", "load"}, {"12", "partition"}, {"13", "greedy"}, {"14", "contention"},
		{"15", "restart"}, {"16", "pause"}, {"getset", "clock-skew"},
	} {
		st, err := catalog.Find(c.step)
		if err != nil {
			t.Fatal(err)
		}
		sc := steps.Scenario(c.sc)
		t.Run(st.Slug+"/"+c.sc, func(t *testing.T) {
			wall, err := play(st, sc, "embedded")
			if err != nil {
				t.Fatal(err)
			}
			inVirtualTime(t)
			virtual, err := play(st, sc, "embedded")
			if err != nil {
				t.Fatal(err)
			}
			want := st.Expect[sc]
			if want == nil {
				want = []steps.Kind{}
			}
			for _, r := range []struct {
				clock string
				rep   *referee.Report
			}{{"the wall clock", wall}, {"virtual time", virtual}} {
				if !r.rep.Complete() || !slices.Equal(r.rep.Violations, want) {
					t.Errorf("%s × %s on %s: %v (complete %v), the matrix says %v\n%s", st.Slug, sc, r.clock, r.rep.Violations, r.rep.Complete(), want, r.rep.Text())
				}
			}
		})
	}
}

// TestHeadlessPlaysInVirtualTime: lab run and lab matrix, as shipped (no test's bubble), play the
// embedded backend in a grader they build, in virtual time: each cell's clock, read at its start
// in the grader, is a testing/synctest bubble's, and the verdicts are the matrix's. What it holds
// is which clock the cells read, not how long they took.
func TestHeadlessPlaysInVirtualTime(t *testing.T) {
	if bubble != nil {
		t.Fatal("a test's bubble is set: the commands would play in this process")
	}
	var stderr bytes.Buffer
	pl, err := newPlayer("", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.close()
	if pl.gr == nil || !strings.Contains(stderr.String(), "building the grader") {
		t.Fatalf("the embedded backend plays in this process, with no grader built (stderr %q)", stderr.String())
	}
	st, err := catalog.Find("08")
	if err != nil {
		t.Fatal(err)
	}
	scs := []steps.Scenario{steps.Slow, steps.Pause}
	ps, err := pl.cells(st, scs)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if p.err != nil {
			t.Fatalf("%s: %v", scs[i], p.err)
		}
		want := st.Expect[scs[i]]
		if want == nil {
			want = []steps.Kind{}
		}
		if p.clock != matrix.VirtualTime || !p.rep.Complete() || !slices.Equal(p.rep.Violations, want) {
			t.Errorf("%s × %s: on %q, %v (complete %v), want virtual time and %v", st.Slug, scs[i], p.clock, p.rep.Violations, p.rep.Complete(), want)
		}
	}
	tmp := pl.gr.tmp
	pl.close()
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the grader's build is still there after close: %v", err)
	}
}
