package arena

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// stepArena is an arena for st on the embedded backend with one buyer.
func stepArena(t *testing.T, st *steps.Step) (*Arena, *process) {
	t.Helper()
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewArena(context.Background(), Config{Step: st, Env: env, Stock: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		env.Close()
	})
	return a, a.addBuyer()
}

// TestUnlockOutlivesTheRequest: from step 03 on the unlock runs in a defer, and it must reach
// Redis even when the request's context ends inside the critical section (Java's finally has no
// such hole): the order's context is cancelled during its work, and the lock must be free after.
func TestUnlockOutlivesTheRequest(t *testing.T) {
	for _, st := range catalog.Steps {
		if st.Number < 3 || st.NoLock {
			continue // 01 and 17 take no lock: there is no unlock to outlive anything
		}
		t.Run(st.Slug, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, p := stepArena(t, st)
				ctx, cancel := context.WithCancel(context.Background())
				stage := a.NewStage(ctx, 1, a.t)
				defer stage.Close()
				stage.actor(p.n).SlowWork()
				done := make(chan error, 1)
				go func() { done <- a.order(ctx, p, orderPlan{}) }()
				for a.Holder() != p.n {
					time.Sleep(time.Millisecond)
				}
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("the cancelled order returned %v", err)
				}
				if st := a.Lock(context.Background()); st.Held {
					t.Fatalf("the lock is still held after the request's context ended: %+v", st)
				}
			})
		})
	}
}

// TestUnlockWithoutHoldTouchesNothing: a Locker that counts its holds in the process (06–10)
// answers an Unlock it holds nothing for with ErrNotOwner and sends no command. (From 11 on the
// count lives in Redis, per request, and the unlock script answers it.)
func TestUnlockWithoutHoldTouchesNothing(t *testing.T) {
	for _, st := range catalog.Steps {
		if st.Number < 6 || st.Number > 10 {
			continue
		}
		t.Run(st.Slug, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, p := stepArena(t, st)
				err := p.locker.inner.Unlock(context.Background(), a.lockKey)
				if !errors.Is(err, steps.ErrNotOwner) {
					t.Errorf("Unlock without a hold returned %v, want ErrNotOwner", err)
				}
				if n := a.Report(context.Background()).Commands; n != 0 {
					t.Errorf("Unlock without a hold sent %d commands", n)
				}
			})
		})
	}
}
