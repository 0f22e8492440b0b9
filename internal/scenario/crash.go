package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Crash: the first holder's process dies inside its work; its lock must be free again once its
// TTL has run out, when two more buyers come. The key crashes the holder at once.
var Crash = add(&Scenario{
	Name: steps.Crash, Column: 3,
	What:   "the first holder's process dies inside the critical section",
	Judges: []steps.Kind{steps.Stuck},
	Move:   arena.FaultCrash,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2, b3 := s.Buyer(), s.Buyer(), s.Buyer()
		b1.CrashInWork()
		b1.Order()
		s.Wait(b1.Under())
		s.Sleep(3 * T / 2)
		b2.Order()
		s.Sleep(T / 10)
		b3.Order()
	},
	Key:         "x",
	Label:       "crash",
	Help:        "its process dies at once; no deferred code runs",
	NeedsHolder: true, Pressed: "crashed: its process died, its deferred code will never run",
})
