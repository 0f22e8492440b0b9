package lock

import (
	"context"
	"errors"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// unlockTimeout bounds the deferred unlock: a Redis that does not answer must not hold the
// request for ever. It outlasts any pause the lab stages, even at its slowest pace (a 4 s TTL).
const unlockTimeout = 10 * time.Second

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
		// Like Java's finally, the unlock runs even when the request's context has ended (a
		// client gave up, a deadline passed): it gets a context of its own, bounded in time.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		err = errors.Join(err, l.Unlock(uctx, key))
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
