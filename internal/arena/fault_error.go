package arena

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultError: the work inside the critical section returns an error.
const FaultError history.Fault = "error"

var _ = addMove(&Move{
	Fault: FaultError, Rank: 1, On: OnOrder, Explored: true, Scenario: steps.Error,
	What: "the work inside the critical section returns an error",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.FailWork(); return nil },
})

// FailWork makes the buyer's work return an error, at once if it is at work, else in its next
// order's work.
func (b *Actor) FailWork() {
	b.arm(FaultError, inWork, 0, "its work returns an error", func(w *work, _ *armedFault) error {
		w.s.p.a.faulted(w.s.o)
		return ErrWork
	})
}
