package drive_test

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"go.uber.org/goleak"
)

// session plays moves (as lab drive -moves reads them) on step slug in a bubble of t, and returns
// what each move said, the session's report, and the violations the referee announced.
func session(t *testing.T, slug, moves string) (said [][]string, rep *referee.Report, found []drive.Found) {
	t.Helper()
	st, err := catalog.Find(slug)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := drive.Parse(moves)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := drive.Open(drive.Config{Step: st}, synctest.Wait)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			w, err := s.Play(m)
			if err != nil {
				t.Logf("move %d (%s): %v", i+1, m.Key, err)
				continue
			}
			said = append(said, w)
		}
		found = s.Found()
		rep = s.End()
	})
	return said, rep, found
}

func noLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// TestEverySolutionReachesItsGoal: every step's par solution, played, makes the referee find the
// challenge's goal (17's does not: it holds), and played again gives the same history, record for
// record.
func TestEverySolutionReachesItsGoal(t *testing.T) {
	noLeak(t)
	for _, st := range catalog.Steps {
		ch, ok := catalog.ChallengeOf(st.Slug)
		if !ok {
			t.Errorf("%s has no challenge", st.Slug)
			continue
		}
		t.Run(st.Slug, func(t *testing.T) {
			_, rep, found := session(t, st.Slug, ch.Solution)
			reached := slices.ContainsFunc(found, func(f drive.Found) bool { return f.Kind == ch.Goal }) || slices.Contains(rep.Violations, ch.Goal)
			if reached == ch.Holds {
				t.Errorf("%s: %q reached %s: %v (found %v, verdict %v)", st.Slug, ch.Solution, ch.Goal, reached, found, rep.Violations)
			}
			_, again, _ := session(t, st.Slug, ch.Solution)
			if a, b := steptest.Canonical(t, rep.History), steptest.Canonical(t, again.History); a != b {
				t.Errorf("%s: the same moves gave two histories:\n%s", st.Slug, steptest.FirstDiff(a, b))
			}
		})
	}
}

// TestParse: moves read as a learner types them, a fault key on the buyer chosen last (or named),
// and said back the same way; an unknown key is a bad move naming it.
func TestParse(t *testing.T) {
	ms, err := drive.Parse("1 1 w 2 x + k e1 3 p")
	if err != nil {
		t.Fatal(err)
	}
	want := []drive.Move{drive.Send(1), drive.Send(1), drive.Wait(), drive.Send(2), {Key: "x", Buyer: 2},
		{Key: "+"}, {Key: "k"}, {Key: "e", Buyer: 1}, drive.Send(3), {Key: "p", Buyer: 3}}
	if !slices.Equal(ms, want) {
		t.Fatalf("got %v\nwant %v", ms, want)
	}
	if s := drive.Format(ms); s != "1 1 w 2 x + k e1 3 p" {
		t.Fatalf("said back as %q", s)
	}
	for _, bad := range []string{"q", "0", "x0", "ww", "10"} {
		if _, err := drive.Parse("1 " + bad); !errors.Is(err, drive.ErrBadMove) || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestTwentyPlaysOneHistory: the same moves give the same history, record for record, twenty
// times over — for sessions with a failover, a pause, a quorum's renewals on three nodes, a
// pub/sub wake-up and a lease guard.
func TestTwentyPlaysOneHistory(t *testing.T) {
	noLeak(t)
	for _, slug := range []string{"05_owner", "09_lua_unlock", "12_lease_guard", "13_pubsub", "15_redlock", "16_fencing"} {
		ch, _ := catalog.ChallengeOf(slug)
		_, first, _ := session(t, slug, ch.Solution)
		want := steptest.Canonical(t, first.History)
		for i := 2; i <= 20; i++ {
			_, rep, _ := session(t, slug, ch.Solution)
			if got := steptest.Canonical(t, rep.History); got != want {
				t.Fatalf("%s: play %d differs from play 1:\n%s", slug, i, steptest.FirstDiff(want, got))
			}
		}
	}
}

// TestTimeStandsStill: a session left idle between two moves — its goroutine waiting for the next
// move on a channel made outside its bubble, as the grader's TestDrive waits on its stdin — is the
// same history as one played without the wait: no lease, lease guard or ticker of step 12 moved
// while the learner thought. The wait is a second of the wall clock ($LOCKSTEP_IDLE: say 60s), and
// any wait proves as much, by construction: nothing in the bubble can see the wall clock.
func TestTimeStandsStill(t *testing.T) {
	noLeak(t)
	idle := time.Second
	if s := os.Getenv("LOCKSTEP_IDLE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		idle = d
	}
	ch, _ := catalog.ChallengeOf("12_lease_guard")
	moves, _ := drive.Parse(ch.Solution)
	play := func(wait time.Duration) *referee.Report {
		d := drive.Local(catalog.Find, func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }, synctest.Wait)
		defer d.Close()
		if _, err := d.Open(drive.Opening{Step: "12_lease_guard", Moves: moves[:4]}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait) // the learner thinks: buyer 1 holds the lock, its lease guard armed
		var f *drive.Frame
		for _, m := range moves[4:] {
			var err error
			if f, err = d.Move(m); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.ContainsFunc(f.Found, func(x drive.Found) bool { return x.Kind == ch.Goal }) {
			t.Fatalf("after waiting %s the goal was not reached: %v", wait, f.Found)
		}
		rep, err := d.End()
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	waited, straight := play(idle), play(0)
	if !slices.Equal(waited.Violations, straight.Violations) {
		t.Fatalf("verdict after waiting %s: %v; without: %v", idle, waited.Violations, straight.Violations)
	}
	if a, b := steptest.Canonical(t, waited.History), steptest.Canonical(t, straight.History); a != b {
		t.Fatalf("waiting %s changed the history:\n%s", idle, steptest.FirstDiff(a, b))
	}
}

// TestTheFixHolds: a step's par solution, played on the step that fixes its challenge, does not
// reach the goal (a move it cannot play there is skipped): 03's defer deletes what 02 left, 05's
// owner check spares buyer 2's lock, 08's watchdog renews the lease 07's held write outlived, 09's
// script closes 08's gap, 12's lease guard stops the work 11's cut let go on, and 14's line keeps
// 13's late buyers behind buyer 1. The docs say so.
func TestTheFixHolds(t *testing.T) {
	for _, c := range []struct{ from, fix string }{
		{"02_setnx", "03_finally"}, {"04_atomic_ttl", "05_owner"}, {"07_spin", "08_watchdog"},
		{"08_watchdog", "09_lua_unlock"}, {"11_hash_owner", "12_lease_guard"}, {"13_pubsub", "14_fair"},
	} {
		ch, _ := catalog.ChallengeOf(c.from)
		_, rep, found := session(t, c.fix, ch.Solution)
		if slices.ContainsFunc(found, func(f drive.Found) bool { return f.Kind == ch.Goal }) || slices.Contains(rep.Violations, ch.Goal) {
			t.Errorf("%s's solution %q reaches %s on %s too: %v", c.from, ch.Solution, ch.Goal, c.fix, rep.Violations)
		}
	}
}

// TestASilentGraderIsStopped: a session that never answers (a lock whose sync.Mutex stopped its
// bubble's clock) is ErrStopped after the driver's patience, not a lab that hangs.
func TestASilentGraderIsStopped(t *testing.T) {
	noLeak(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, inR) // a grader that reads, and says nothing
	d := drive.NewDriver(inW, outR, func() error { inW.Close(); outW.Close(); return nil })
	d.Patience = 50 * time.Millisecond
	if _, err := d.Open(drive.Opening{Step: "05"}); !errors.Is(err, drive.ErrStopped) {
		t.Fatalf("got %v, want ErrStopped", err)
	}
	d.Close()
}
