package steps

import (
	"context"
	"errors"
	"time"
)

// unlockTimeout bounds DefaultOrder's deferred unlock: a Redis that does not answer must not hold
// the request for ever. It outlasts any pause the lab stages, even at its slowest pace.
const unlockTimeout = 10 * time.Second

// DefaultOrder is the order handler the lab gives a learner's lock that brings no Order of its
// own: step 03's try/finally handler. It takes the lock, is refused (ErrBusy) when Lock says no,
// reads the stock, works, writes the stock one less, and gives the lock back in a defer, with a
// context of its own so that a request that ended still unlocks. Hazard: it is the caller half
// of the lesson, fixed — a lock whose holder must carry something in its context (a request
// token, a lease that can end the work, a fencing token) needs its own Order, or this handler
// will neither carry it nor check it.
func DefaultOrder(ctx context.Context, l Locker, s Shop) (err error) {
	key := s.LockKey()
	ok, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return ErrBusy
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		err = errors.Join(err, l.Unlock(uctx, key))
	}()
	stock, err := s.Stock(ctx)
	if err != nil {
		return err
	}
	if stock <= 0 {
		return ErrSoldOut
	}
	if err := s.Work(ctx); err != nil {
		return err
	}
	return s.SetStock(ctx, stock-1)
}
