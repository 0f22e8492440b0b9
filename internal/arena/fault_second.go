package arena

import (
	"context"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultSecond: the process starts a second order at once, with the same Locker.
const FaultSecond history.Fault = "second"

var _ = addMove(&Move{
	Fault: FaultSecond, Rank: 9, On: OnOrder, Last: true, Explored: true, Scenario: steps.TwoRequests,
	What: "the process starts a second order at once, with the same Locker",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.SecondRequest(); return nil },
})

// SecondRequest starts, once the buyer's order under way is inside the critical section or at its
// work (at once if it is; once its next order is, if this one has written already), a second order on the same process with the same Locker, as a second request
// on one server: the first stays inside until the second has met the lock, and the second until
// the first is done (each at most 2 × TTL).
func (b *Actor) SecondRequest() {
	s := b.s
	m := s.newMove(FaultSecond, func(m *move) {
		s.a.nowhere("the second request never started: buyer %d's order never got in nor returned", b.N)
	})
	k := b.current()
	if s.sig.has(sigKey{buyer: b.N, order: k, kind: sigWrote}) || s.sig.has(sigKey{buyer: b.N, order: k, kind: sigDone}) {
		k++ // that order is past its critical section: the second request meets its next one
	}
	first := k
	// The first stays until the second has met the lock, or is under way (an order that takes no
	// lock meets none).
	b.stayInside(first, s.FirstOf(b.OrderSettled(first+1), b.orderUnder(first+1)))
	// It counts as an order from now: a play waits for it.
	s.run(b, func(ctx context.Context) {
		if !s.await(b.orderUnder(first)) {
			return
		}
		if !m.strike(b.N, "the same process starts a second order, with the same Locker (a second request to one server)", nil, 0) {
			return
		}
		b.order(ctx, orderPlan{hold: b.OrderDone(first)})
	})
}
