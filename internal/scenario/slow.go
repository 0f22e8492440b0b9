package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Slow: the holder's work goes on until the second buyer, who comes 2.4 TTL after it got in (its
// lease long gone), has got in or been refused (at most 6 TTL); the second stays inside until
// the holder is done.
var Slow = add(&Scenario{
	Name: steps.Slow, Column: 4,
	What:   "the first holder's work goes on, process alive, until a second buyer who comes 2.4 × TTL later is in",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease, steps.ForeignRenewal},
	Move:   arena.FaultSlow,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2 := s.Buyer(), s.Buyer()
		b1.SlowWork()
		b1.Order()
		s.Wait(b1.Under())
		s.Sleep(12 * T / 5)
		b2.Order(arena.HoldUntil(b1.Done()))
	},
	Key:         "s",
	Label:       "slow",
	Help:        "its work goes on, the process alive, until another buyer gets in or, a TTL on, still finds the lock taken (at most 6 × TTL)",
	NeedsHolder: true, Pressed: "its work now goes on until another buyer gets in (at most 6 × TTL)",
})
