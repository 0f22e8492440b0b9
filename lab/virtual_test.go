package main

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// inVirtualTime makes the cells the headless commands play during t, on the embedded backend,
// play in virtual time: each inside a testing/synctest bubble of t, as the step suites play
// theirs. The lab itself plays on the wall clock (Go has virtual time only under go test); the
// referee's rules are the same on both clocks, and TestBothClocks checks a sample of cells both
// ways.
func inVirtualTime(t *testing.T) {
	t.Helper()
	bubble = func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	t.Cleanup(func() { bubble = nil })
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
