package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
)

// Order is the order endpoint as 002's readers would write it: the business method under the
// @RedisLock annotation, here wrapped in WithLock around the product's lock. Each order is one
// request: WithLock gives it a request id of its own, and the work's nested call carries it.
// Hazard: every error fn returns — the work failed, or the stock ran out — is Java's exception
// path, and WithLock has no finally: the lock is left taken, and its watchdog renews it.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) error {
	return WithLock(ctx, l, s.LockKey(), func(ctx context.Context) error {
		stock, err := s.Stock(ctx)
		if err != nil {
			return err
		}
		if stock <= 0 {
			return steps.ErrSoldOut
		}
		if err := s.Work(ctx); err != nil {
			return err
		}
		return s.SetStock(ctx, stock-1)
	})
}
