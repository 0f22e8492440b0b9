package arena

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
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
			env, err := redisenv.NewEmbedded()
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			st, err := catalog.Find("04")
			if err != nil {
				t.Fatal(err)
			}
			a, err := NewArena(context.Background(), Config{Step: st, Env: env, Stock: 3,
				Judged: []steps.Kind{steps.Overlap}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			T := a.t.TTL
			ctx, cancel := context.WithTimeout(context.Background(), 30*T)
			defer cancel()
			s := a.NewStage(ctx, 1, a.t)
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
			if out := s.Finish(30*T, func() bool { return false }); out != "" {
				t.Fatalf("timed out: %s", out)
			}
			cancel()
			s.Close()
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
		env, err := redisenv.NewEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		spin, err := catalog.Find("07")
		if err != nil {
			t.Fatal(err)
		}
		peeking := *spin
		peeking.Order = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
			if n, err := s.Stock(ctx); err != nil || n <= 0 {
				return steps.ErrSoldOut
			}
			return steps.DefaultOrder(ctx, l, s)
		}
		a, err := NewArena(context.Background(), Config{Step: &peeking, Env: env, Stock: 3,
			Judged: []steps.Kind{steps.Overlap}})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		T := a.t.TTL
		ctx, cancel := context.WithTimeout(context.Background(), 30*T)
		defer cancel()
		s := a.NewStage(ctx, 1, a.t)
		buyers := s.Buyers(2)
		one, two := buyers[0], buyers[1]
		var doneAt, enteredAt time.Time
		go func() { <-one.Done(); doneAt = time.Now() }()
		go func() { <-two.Entered(); enteredAt = time.Now() }()
		one.Order(HoldUntil(two.Entered()), HoldAtMost(T/2))
		s.Wait(one.Entered())
		two.Order()
		if out := s.Finish(30*T, func() bool { return false }); out != "" {
			t.Fatalf("timed out: %s", out)
		}
		cancel()
		s.Close()
		synctest.Wait()
		if doneAt.IsZero() || enteredAt.IsZero() || enteredAt.Before(doneAt) {
			t.Errorf("buyer 2 entered at %v, buyer 1's order done at %v: its peek was taken for its entry", enteredAt, doneAt)
		}
	})
}
