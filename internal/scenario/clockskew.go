package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// ClockSkew: a second process whose clock runs 3 × TTL ahead asks while the holder works; the
// holder stays inside until it has got in or finished, or for a quarter TTL after it found the
// lock taken: time for a takeover it decides on (a GETSET of a lock that its clock calls expired)
// to land, on a backend whose round trip is long too.
var ClockSkew = add(&Scenario{
	Name: steps.ClockSkew, Column: 14,
	What:   "a second process whose wall clock runs 3 × TTL ahead asks for the lock while the holder works",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold},
	Move:   arena.FaultClockSkew,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1 := s.Buyer()
		b2 := s.Buyer(arena.Skewed(3 * T))
		b1.Order(arena.HoldUntil(s.Looked(b2, s.Timing().TTL/4)))
		s.Wait(b1.Under())
		s.Sleep(T / 10)
		b2.Order(arena.HoldUntil(b1.Done()))
	},
})
