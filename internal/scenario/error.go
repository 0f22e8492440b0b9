package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Error: the first holder's work fails; its lock must be free again once its TTL has run out,
// when two more buyers come.
var Error = add(&Scenario{
	Name: steps.Error, Column: 2,
	What:   "the first holder's work returns an error",
	Judges: []steps.Kind{steps.Stuck},
	Move:   arena.FaultError,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2, b3 := s.Buyer(), s.Buyer(), s.Buyer()
		b1.FailWork()
		b1.Order()
		s.Wait(b1.Under())
		s.Sleep(3 * T / 2)
		b2.Order()
		s.Sleep(T / 10)
		b3.Order()
	},
	Key:         "e",
	Label:       "error",
	Help:        "its work returns an error",
	NeedsHolder: true, Pressed: "its work will return an error",
})
