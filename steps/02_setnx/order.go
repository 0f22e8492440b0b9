package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
)

// Order is the article's submitOrderV1: take the lock, sell, delete the lock. Hazard: every early
// return (sold out, a failed read, an error in the work) leaves without deleting the lock, and with
// no TTL nobody can ever order again.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) error {
	key := s.LockKey()
	ok, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return steps.ErrBusy
	}
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
	if err := s.SetStock(ctx, stock-1); err != nil {
		return err
	}
	return l.Unlock(ctx, key)
}
