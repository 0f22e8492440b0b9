package arena

import (
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultSlow: the work goes on, the process alive, until its counterpart acts.
const FaultSlow history.Fault = "slow"

var _ = addMove(&Move{
	Fault: FaultSlow, Rank: 3, On: OnOrder, Explored: true, Scenario: steps.Slow,
	What: "the work goes on, the process alive, until its counterpart acts",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.SlowWork(); return nil },
})

// SlowWork makes the buyer's work go on, its process alive, until its counterpart has acted (at
// most 6 × TTL): at once if it is at work, else in its next order's.
func (b *Actor) SlowWork() {
	cap := capWork * b.s.a.t.TTL
	b.arm(FaultSlow, inWork, cap, "its work goes on, the process alive, "+b.s.a.lasting(cap), func(w *work, x *armedFault) error {
		w.end, w.slowed = time.Now().Add(x.cap), x.until()
		return nil
	})
}
