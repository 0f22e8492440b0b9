package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Greedy: the greedy buyer orders again and again; two others come once it is inside and wait.
// Both come while its first order works (T/20 after it got in, and T/20 later), never at its
// first release: a quorum lock's second buyer, arriving with the greedy retry, won two of three
// nodes from it (15: ✓ in 1 of 10 runs).
var Greedy = add(&Scenario{
	Name: steps.Greedy, Column: 12,
	What:   "one buyer orders again the instant its order returns; after each release its retry reaches Redis first",
	Judges: []steps.Kind{steps.Starved},
	Move:   arena.FaultGreedy,
	Stock:  6,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1 := s.Buyer(arena.Greedy())
		b2, b3 := s.Buyer(), s.Buyer()
		b1.KeepOrdering()
		s.Wait(b1.Under())
		s.Sleep(T / 20)
		b2.Order()
		s.Sleep(T / 20)
		b3.Order()
	},
})
