package sim

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// shop is one process's steps.Shop: its stock lives in the inventory store, its work is where the
// arena's faults act.
type shop struct {
	p    *process
	hold <-chan struct{} // when not nil, the work stays inside until it closes (or HoldCap passes)
}

func (s *shop) LockKey() string { return s.p.a.lockKey }

func (s *shop) Stock(ctx context.Context) (int, error) {
	n, err := s.p.inv.Get(ctx, s.p.a.stockKey).Int()
	if err == redis.Nil {
		n, err = 0, nil
	}
	if err != nil {
		return 0, err
	}
	s.p.a.enter(s.p, n)
	return n, nil
}

func (s *shop) SetStock(ctx context.Context, n int) error {
	if err := s.p.inv.Set(ctx, s.p.a.stockKey, n, 0).Err(); err != nil {
		return err
	}
	s.p.a.write(s.p, n)
	return nil
}

// Work is the business work between reading and writing the stock. It lasts Timing.Work unless a
// fault armed on the process (or injected while it works) says otherwise.
func (s *shop) Work(ctx context.Context) error {
	p, a := s.p, s.p.a
	p.mu.Lock()
	p.inWork = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.inWork = false
		p.mu.Unlock()
	}()
	start := time.Now()
	end := start.Add(a.t.Work)
	var faulted time.Time // when a slow or pause fault began
	for {
		switch f := p.take(FaultError, FaultCrash, FaultSlow, FaultPause, FaultReentrant); f {
		case FaultError:
			a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: "error: the work returns an error"})
			return ErrWork
		case FaultCrash:
			a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: "crash: the process dies inside the critical section"})
			p.crash()
			return ErrCrashed
		case FaultSlow:
			a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: "slow: the work takes 3 × TTL"})
			faulted = time.Now()
			end = faulted.Add(3 * a.t.TTL)
		case FaultPause:
			a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: "pause: the process stops the world for 3 × TTL"})
			faulted = time.Now()
			p.freeze(3 * a.t.TTL)
		case FaultReentrant:
			a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: "reentrant: the work calls a helper that takes the same lock"})
			if err := s.nested(ctx); err != nil {
				return err
			}
		}
		// Work until end; then, if the scenario holds this buyer inside, until the hold opens or
		// its cap passes; then wait out any freeze.
		var until time.Time
		var holdC <-chan struct{}
		switch holdUntil := start.Add(a.holdCap()); {
		case time.Now().Before(end):
			until = end
		case s.hold != nil && time.Now().Before(holdUntil):
			until, holdC = holdUntil, s.hold
		default:
			if err := p.awaitThaw(ctx); err != nil || faulted.IsZero() {
				return err
			}
			return p.outlast(ctx, faulted)
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-t.C:
		case <-holdC:
			// What the buyer waited for happened: it finishes its work, one more Work long,
			// so the overlap it was held for is wide enough to see.
			s.hold = nil
			end = time.Now().Add(a.t.Work)
		case <-p.poke:
		case <-p.dead:
			t.Stop()
			return ErrCrashed
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// nested is the helper the work calls in the reentrant fault (the articles' service A calling
// service B): it takes the lock its caller holds, works, and gives it back.
func (s *shop) nested(ctx context.Context) error {
	p, a := s.p, s.p.a
	nctx, cancel := context.WithTimeout(ctx, a.t.TTL/2)
	defer cancel()
	ok, err := p.locker.Lock(nctx, a.lockKey)
	switch {
	case err != nil:
		a.reentryFailed(p, "the nested Lock failed: "+err.Error())
		return ErrReentry
	case !ok:
		a.reentryFailed(p, "the nested Lock was refused: the lock is held — by the caller itself")
		return ErrReentry
	}
	if err := p.sleep(ctx, a.t.TTL/2); err != nil {
		return err
	}
	return p.locker.Unlock(ctx, a.lockKey)
}
