package arena

import (
	"context"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultReentrant: the work calls a helper that takes the same lock again.
const FaultReentrant history.Fault = "reentrant"

var _ = addMove(&Move{
	Fault: FaultReentrant, Rank: 7, On: OnOrder, Explored: true, Scenario: steps.Reentrant,
	What: "the work calls a helper that takes the same lock again",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.NestedLock(); return nil },
})

// NestedLock makes the buyer's work call a helper that takes the lock its order holds, as the
// articles' service A calls service B.
func (b *Actor) NestedLock() {
	b.arm(FaultReentrant, inWork, 0, "its work calls a helper that takes the same lock", func(w *work, _ *armedFault) error {
		return w.s.nested(w.ctx)
	})
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
	a.recordNow(history.Record{Kind: history.RecNested, Buyer: p.n, OK: true})
	if err := p.sleep(ctx, a.t.TTL/2); err != nil {
		return err
	}
	return p.locker.Unlock(ctx, a.lockKey)
}

// reentryFailed records that the nested Lock did not take the lock, and why.
func (a *Arena) reentryFailed(p *process, why string) {
	a.recordNow(history.Record{Kind: history.RecNested, Buyer: p.n, Err: why})
}
