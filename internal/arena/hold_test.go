package arena

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestAHoldEndsWithinTheLease: contention's program on step 04 (a 1-TTL lease, no renewal) with
// buyer 8's lock node out of its reach for 1.2 TTL, as a Sentinel client's first command is late.
// Held until every buyer has settled, the first holder stays past its lease and buyer 8 gets in
// under it: an overlap the program never staged. HoldAtMost keeps it inside for three quarters of
// a TTL at most: no overlap.
func TestAHoldEndsWithinTheLease(t *testing.T) {
	for _, capped := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			a, s, finish := stageOn(t, step(t, "04"))
			T := a.t.TTL
			buyers := s.Buyers(8)
			late := buyers[7]
			open := late.p.block(0)
			time.AfterFunc(T*6/5, open)
			for _, b := range buyers {
				opts := []OrderOption{HoldUntil(s.AllSettled(b)), WorkAtLeast(T / 2)}
				if capped {
					opts = append(opts, HoldAtMost(3*T/4))
				}
				b.Order(opts...)
			}
			finish()
			rep := a.Report(context.Background())
			if overlap := len(rep.Overlaps) > 0; overlap == capped {
				t.Errorf("capped=%v: overlaps %v (want overlap only uncapped)", capped, rep.Overlaps)
			}
		})
	}
}

// TestAPeekIsNoEntry: step 07 (it spins until the lock is free) with a handler that reads the stock before its Lock (a fail-fast
// peek). Buyer 1 holds the lock until buyer 2 has entered, half a TTL at most; buyer 2 orders
// while it holds. Its peek is no entry (the referee's EvEnter.Granted is false), so buyer 2 enters
// only once its Lock said yes, after buyer 1's order is done. Taken for an entry, the peek ended
// buyer 1's hold while buyer 2 still waited in Lock: restart's overlap rested on that margin.
func TestAPeekIsNoEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		peeking := *step(t, "07")
		peeking.Order = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
			if n, err := s.Stock(ctx); err != nil || n <= 0 {
				return steps.ErrSoldOut
			}
			return steps.DefaultOrder(ctx, l, s)
		}
		a, s, finish := stageOn(t, &peeking)
		buyers := s.Buyers(2)
		one, two := buyers[0], buyers[1]
		at := func(w Wait) <-chan time.Time {
			c := make(chan time.Time, 1)
			go func() { <-w; c <- time.Now() }()
			return c
		}
		done, entered := at(one.Done()), at(two.Entered())
		one.Order(HoldUntil(two.Entered()), HoldAtMost(a.t.TTL/2))
		s.Wait(one.Entered())
		two.Order()
		finish()
		doneAt, enteredAt := <-done, <-entered
		if enteredAt.Before(doneAt) {
			t.Errorf("buyer 2 entered at %v, buyer 1's order done at %v: its peek was taken for its entry", enteredAt, doneAt)
		}
	})
}

// step is the catalog's step n.
func step(t *testing.T, n string) *steps.Step {
	t.Helper()
	st, err := catalog.Find(n)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// stageOn is a stage of st's arena on the embedded backend, 3 units, judging overlap, inside the
// caller's synctest bubble; finish plays what was placed to its end (at most 30 TTL) and closes
// the stage. The arena and its Redis close with the test.
func stageOn(t *testing.T, st *steps.Step) (*Arena, *Stage, func()) {
	t.Helper()
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	a, err := NewArena(context.Background(), Config{Step: st, Env: env, Stock: 3,
		Judged: []steps.Kind{steps.Overlap}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	T := a.t.TTL
	ctx, cancel := context.WithTimeout(context.Background(), 30*T)
	t.Cleanup(cancel)
	s := a.NewStage(ctx, 1, a.t)
	return a, s, func() {
		t.Helper()
		if out := s.Finish(30*T, func() bool { return false }); out != "" {
			t.Fatalf("timed out: %s", out)
		}
		cancel()
		s.Close()
	}
}

// TestThePeekIsSaidAsOne: a handler that reads the stock before its Lock, on step 07 (a lock)
// and on step 01 (none). The history's header carries the step's NoLock, so the referee's
// events know themselves: on 07 the read before Lock is a peek, and says so, and the read once
// Lock said yes is inside; on 01 every read is inside. Hazard: the page and the log say what
// Words says; a peek that said "is inside" contradicted the picture, which drew its order
// waiting.
func TestThePeekIsSaidAsOne(t *testing.T) {
	for _, n := range []string{"07", "01"} {
		synctest.Test(t, func(t *testing.T) {
			peeking := *step(t, n)
			order := peeking.Order
			peeking.Order = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
				if n, err := s.Stock(ctx); err != nil || n <= 0 {
					return steps.ErrSoldOut
				}
				return order(ctx, l, s)
			}
			a, s, finish := stageOn(t, &peeking)
			s.Buyers(1)[0].Order()
			finish()
			h := a.Report(context.Background()).History
			if h.NoLock != peeking.NoLock {
				t.Fatalf("step %s: the history's NoLock is %v, the step's %v", n, h.NoLock, peeking.NoLock)
			}
			var peeks, inside []string
			ref := referee.NewReferee(*h, func(e referee.Event) {
				switch {
				case e.Kind != referee.EvEnter:
				case e.Peek():
					peeks = append(peeks, e.Words())
				default:
					inside = append(inside, e.Words())
				}
			})
			for _, rec := range h.Records {
				ref.Add(rec)
			}
			wantPeeks := []string{"buyer 1 peeks before its Lock said yes: read stock 3"}
			if peeking.NoLock {
				wantPeeks = nil
			}
			if !slices.Equal(peeks, wantPeeks) || len(inside) == 0 || !strings.HasPrefix(inside[0], "buyer 1 is inside: read stock 3") {
				t.Errorf("step %s: peeks %q (want %q), inside %q (want buyer 1 inside at stock 3)", n, peeks, wantPeeks, inside)
			}
		})
	}
}
