package arena

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultCrash: the process dies: no command of it, deferred or not, reaches Redis.
const FaultCrash history.Fault = "crash"

var _ = addMove(&Move{
	Fault: FaultCrash, Rank: 2, On: OnOrder, Last: true, Explored: true, Scenario: steps.Crash,
	What: "the process dies: no command of it, deferred or not, reaches Redis",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.CrashInWork(); return nil },
	Now:  func(s *Stage, b *Actor) { b.Crash() },
})

// crashSays is what a crash does.
const crashSays = "the process dies: its connections close, and none of its code, deferred or not, reaches Redis again"

// crash is the crash's strike, in the work (CrashInWork) or at once (Crash): the process dies.
func crash(p *process) error {
	p.crash()
	return ErrCrashed
}

// CrashInWork kills the buyer's process inside its work: at once if it is at work, else in its
// next order's work.
func (b *Actor) CrashInWork() {
	b.arm(FaultCrash, inWork, 0, crashSays, func(w *work, _ *armedFault) error { return crash(w.s.p) })
}

// Crash kills the buyer's process now, wherever it is (the terminal lab's key: the holder may be
// past its work): its connections close, its goroutines' commands are refused, no deferred code
// of it reaches Redis.
func (b *Actor) Crash() {
	m := b.s.newMove(FaultCrash, nil)
	if m.strike(b.N, crashSays, nil, 0) {
		crash(b.p)
	}
}
