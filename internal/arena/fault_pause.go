package arena

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultPause: stop-the-world just before the stock write leaves, until its counterpart acts.
const FaultPause history.Fault = "pause"

var _ = addMove(&Move{
	Fault: FaultPause, Rank: 4, On: OnOrder, Explored: true, Scenario: steps.Pause,
	What: "stop-the-world just before the stock write leaves, until its counterpart acts",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.PauseBeforeWrite(); return nil },
})

// PauseBeforeWrite stops the buyer's whole process (its timers and watchdog too) just before its
// stock write leaves, until its counterpart has acted (at most 6 × TTL): the write is on its way
// and goes out when the pause ends, whatever the context says by then.
func (b *Actor) PauseBeforeWrite() {
	cap := capWork * b.s.a.t.TTL
	says := "the whole process stops (its watchdog too) just before its stock write leaves, " + b.s.a.lasting(cap)
	b.arm(FaultPause, atWrite, cap, says, func(w *work, x *armedFault) error {
		w.s.p.freeze(x.cap, x.until(), counterpart)
		return nil
	})
}
