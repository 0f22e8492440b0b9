package scenario_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestLiveKeysBreakAsTheMatrix: every fault key of the terminal lab, pressed once on a live session
// of five buyers (three TTLs in, on whoever holds the lock, trying again while nobody does), finds
// within ten TTLs what its scenario's cell of the matrix says, among the kinds the scenario judges:
// the key plays the scenario's own move. In virtual time on the embedded backend.
//
// A fair queue (14, 16) failed over while buyers wait in its line keeps them behind the stricken
// holder — the line the replica has still names it first — until its lease guard, renewing on the
// promoted node, finds the lock gone and stops its order: the failover key first lets the line
// drain (Scenario.Quiet), as its scenario fails over a lock nobody waits for, and breaks them at
// five buyers too.
//
// By default each key is pressed on a sample of steps: the first whose cell it breaks, the last
// whose cell it breaks, and the first after that it does not (about 30 sessions); LAB_LIVE=all
// presses every key on every step (200 sessions, a minute on 2 cores).
func TestLiveKeysBreakAsTheMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: live sessions")
	}
	all := os.Getenv("LAB_LIVE") == "all"
	for _, st := range catalog.Steps {
		t.Run(st.Slug, func(t *testing.T) {
			t.Parallel()
			for _, sc := range scenario.Keyed() {
				if !all && !sampled(st, sc) {
					continue
				}
				buyers := 5 // the lab's default
				// A second request makes two calls of one Locker at once: steps 06–10 hold a
				// sync.Mutex across their Redis calls, which a testing/synctest bubble cannot
				// see through (its clock would stop), so that key plays on the wall clock.
				// pressLive plays the embedded backend whatever LAB_REDIS says: in a bubble of
				// its own (steptest.Bubble would leave it on the wall clock under LAB_REDIS=server,
				// where 16 × live failover missed its overlap 1 run in 4 under -race).
				// On the wall clock a loaded machine can stall the run longer than a lease (a
				// watchdog's renewal late, the lock expired under its holder): such a session is
				// watched for stalls and played again (at most scenario.StallTries in all), as
				// scenario.Steady plays a cell, so the verdict is the lock's, not the load's.
				play := func(t *testing.T, f func(*testing.T)) { synctest.Test(t, f) }
				wall := sc.Name == steps.TwoRequests
				if wall {
					play = func(t *testing.T, f func(*testing.T)) { f(t) }
				}
				play(t, func(t *testing.T) {
					got, err := pressLive(st, sc, buyers, wall)
					if errors.Is(err, arena.ErrNoHolder) && st.NoLock && len(st.Expect[sc.Name]) == 0 {
						return // an order that takes no lock and is never inside (17): nothing to hit
					}
					if err != nil {
						t.Fatalf("%s: %v", sc.Name, err)
					}
					if want := st.Expect[sc.Name]; !slices.Equal(got, want) && len(got)+len(want) > 0 {
						t.Errorf("%s, live with %d buyers: found %v, the matrix says %v", sc.Name, buyers, got, want)
					}
				})
			}
		})
	}
}

// pressLive presses sc's key on a live session of st with buyers buyers, and returns the kinds
// sc judges that the session found. On the wall clock (wall) a session the machine stalled is
// played again, at most scenario.StallTries sessions in all.
func pressLive(st *steps.Step, sc *scenario.Scenario, buyers int, wall bool) ([]steps.Kind, error) {
	for tries := 1; ; tries++ {
		got, stalled, err := pressLiveOnce(st, sc, buyers, wall)
		if !stalled || tries >= scenario.StallTries {
			return got, err
		}
	}
}

// pressLiveOnce is one session of pressLive, and whether the machine stalled it (watched on the
// wall clock only: in a bubble there is no machine to stall it).
func pressLiveOnce(st *steps.Step, sc *scenario.Scenario, buyers int, wall bool) ([]steps.Kind, bool, error) {
	env, err := redisenv.NewEmbeddedNodes(max(st.Nodes, 1))
	if err != nil {
		return nil, false, err
	}
	defer env.Close()
	tm := history.DefaultTiming()
	l, err := arena.StartLive(arena.Config{Step: st, Env: env, Stock: 100, Timing: tm, WatchStalls: wall}, buyers)
	if err != nil {
		return nil, false, err
	}
	time.Sleep(3 * tm.TTL)
	for range 100 {
		if _, err = scenario.Press(l, sc); err == nil {
			break
		}
		time.Sleep(tm.TTL / 20)
	}
	time.Sleep(10 * tm.TTL)
	rep := l.Stop()
	if err != nil {
		return nil, false, err
	}
	var got []steps.Kind
	for _, k := range rep.Found {
		if slices.Contains(sc.Judges, k) {
			got = append(got, k)
		}
	}
	return got, arena.Stalled(rep), nil
}

// sampled reports whether the default run presses sc's key on st: the first and the last step
// (in the catalog's order) whose cell sc breaks, and the first after the last that it does not.
func sampled(st *steps.Step, sc *scenario.Scenario) bool {
	first, last, after := -1, -1, -1
	for i, x := range catalog.Steps {
		if len(x.Expect[sc.Name]) > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	for i := last + 1; i < len(catalog.Steps); i++ {
		if len(catalog.Steps[i].Expect[sc.Name]) == 0 {
			after = i
			break
		}
	}
	i := slices.Index(catalog.Steps, st)
	return i == first || i == last || i == after
}

// TestAKeyWaitsForAHolderOnItsWayOut: a key pressed while the holder is in its Unlock does not
// strike it (its lock is on its way out: a crash there leaves 03 nothing stuck, where the matrix
// says stuck); Press says nobody holds the lock, and the lab's key tries again for the next holder.
func TestAKeyWaitsForAHolderOnItsWayOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base, err := catalog.Find("03")
		if err != nil {
			t.Fatal(err)
		}
		in, out := make(chan struct{}), make(chan struct{})
		var once sync.Once
		st := *base
		st.New = func(p steps.Proc) steps.Locker {
			return &heldUnlock{Locker: base.New(p), in: in, out: out, once: &once}
		}
		env, err := redisenv.NewEmbeddedNodes(1)
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		l, err := arena.StartLive(arena.Config{Step: &st, Env: env, Stock: 100, Timing: history.DefaultTiming()}, 1)
		if err != nil {
			t.Fatal(err)
		}
		<-in // buyer 1 is in its first Unlock, its DEL not sent yet
		who, err := scenario.Press(l, scenario.Crash)
		close(out)
		l.Stop()
		if !errors.Is(err, arena.ErrNoHolder) {
			t.Errorf("the crash key in the holder's Unlock: hit buyer %d (%v), want no holder", who, err)
		}
	})
}

// heldUnlock holds its process's first Unlock call, once begun, until out is closed.
type heldUnlock struct {
	steps.Locker
	in, out chan struct{}
	once    *sync.Once
}

func (u *heldUnlock) Unlock(ctx context.Context, key string) error {
	u.once.Do(func() { u.in <- struct{}{}; <-u.out })
	return u.Locker.Unlock(ctx, key)
}
