package arena_test

import (
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

func embedded(t *testing.T) redisenv.Env {
	t.Helper()
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// injectInto waits until some buyer holds the lock and presses scenario f's key on it.
func injectInto(t *testing.T, l *arena.Live, f steps.Scenario) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if who, err := scenario.Press(l, scenario.Find(f)); err == nil {
			return who
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no buyer ever held the lock")
	return 0
}

// TestLiveCrashLeavesStuckLock injects a crash into the holder of step 03's lock (no TTL) in a
// live session, and checks the session reports the stuck lock and stops every goroutine.
func TestLiveCrashLeavesStuckLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := catalog.Find("03")
		tm := history.DefaultTiming()
		l, err := arena.StartLive(arena.Config{Step: st, Env: embedded(t), Stock: 50, Timing: tm}, 4)
		if err != nil {
			t.Fatal(err)
		}
		who := injectInto(t, l, steps.Crash)
		time.Sleep(3 * tm.TTL)
		rep := l.Stop()
		if !rep.Stuck || rep.StuckOwner != who {
			t.Fatalf("crashed holder %d: want a stuck lock owned by it, got stuck=%v owner=%d\n%s", who, rep.Stuck, rep.StuckOwner, rep.Text())
		}
	})
}

// TestLiveNoFalseForeignRelease: while buyers spin on the lock (steps 07–09), a holder is paused
// past its lease (09) or made slow (07), and the spinners' SET NX meets the lease as it runs out.
// A command that cannot delete is never blamed: no session may find a foreign release where the
// step cannot make one. The issue that found this saw it in 2 of 12 sessions of 09 and 7 of 15
// of 07.
func TestLiveNoFalseForeignRelease(t *testing.T) {
	for _, c := range []struct {
		step string
		f    steps.Scenario
	}{{"09", steps.Pause}, {"07", steps.Slow}} {
		t.Run(c.step+"/"+string(c.f), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				st, _ := catalog.Find(c.step)
				for i := range sessions() {
					tm := history.DefaultTiming()
					l, err := arena.StartLive(arena.Config{Step: st, Env: embedded(t), Stock: 100, Timing: tm}, 6)
					if err != nil {
						t.Fatal(err)
					}
					injectInto(t, l, c.f)
					time.Sleep(4 * tm.TTL)
					rep := l.Stop()
					if slices.Contains(rep.Found, steps.ForeignRelease) {
						t.Fatalf("session %d: a foreign release on step %s:\n%s", i, st.Slug, rep.Text())
					}
					if !rep.Complete() {
						t.Fatalf("session %d: no verdict: %s", i, rep.Why())
					}
				}
			})
		})
	}
}

// sessions is how many live sessions a test plays: 10, or $LAB_SESSIONS.
func sessions() int {
	if n := envInt("LAB_SESSIONS"); n > 0 {
		return n
	}
	return 10
}

// TestLiveRetireFinishesTheOrder: retiring a buyer (the lab's -) lets its order finish, unlock
// included; it must never be the lab that leaves a lock behind.
func TestLiveRetireFinishesTheOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := catalog.Find("03")
		tm := history.DefaultTiming()
		var mu sync.Mutex
		var done []string
		l, err := arena.StartLive(arena.Config{Step: st, Env: embedded(t), Stock: 50, Timing: tm, OnEvent: func(e referee.Event) {
			if e.Kind == referee.EvDone && e.Buyer == 1 {
				mu.Lock()
				done = append(done, e.Err)
				mu.Unlock()
			}
		}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		injectInto(t, l, steps.Slow) // buyer 1 is inside, until another gets in (at most 6 × TTL)
		l.SetBuyers(0)
		time.Sleep(7 * tm.TTL)
		rep := l.Stop()
		mu.Lock()
		defer mu.Unlock()
		if len(done) == 0 || done[len(done)-1] != "" {
			t.Fatalf("the retired buyer's order did not finish: %q", done)
		}
		if rep.Stuck {
			t.Fatalf("retiring a buyer left the lock stuck:\n%s", rep.Text())
		}
	})
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
