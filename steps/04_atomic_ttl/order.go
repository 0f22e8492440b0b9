package lock

import (
	"context"
	"errors"

	"github.com/lockstep-lab/lockstep/steps"
)

// Order is the article's submitOrderV2: the lock is deleted in a defer (Java's finally), so every
// return path gives it back. Hazard: a process that dies inside runs no defer; only the lock's own
// expiry, if it has one, can free the key then.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) (err error) {
	key := s.LockKey()
	ok, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return steps.ErrBusy
	}
	defer func() {
		err = errors.Join(err, l.Unlock(ctx, key))
	}()
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
}
