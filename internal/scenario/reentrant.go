package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Reentrant: the holder's work calls a helper that takes the same lock; the lease is 4 × TTL, so
// the work, the nested call and the wait for the second buyer never outlive it: reentrant judges
// reentry (and, without a lock, overlap) alone.
var Reentrant = add(&Scenario{
	Name: steps.Reentrant, Column: 6,
	What:   "the work calls a helper that takes the same lock again",
	Judges: []steps.Kind{steps.ReentryFailed, steps.Overlap},
	Move:   arena.FaultReentrant,
	Lease:  4,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2, b3 := s.Buyer(), s.Buyer(), s.Buyer()
		b1.NestedLock()
		b1.Order(arena.HoldUntil(b2.Settled()))
		s.Wait(b1.Under())
		s.Sleep(T / 10)
		b2.Order()
		s.Sleep(T / 10)
		b3.Order()
	},
	Key:         "n",
	Label:       "nested",
	Help:        "its work calls a helper that takes the same lock",
	NeedsHolder: true, Pressed: "its work calls a helper that takes the same lock again",
})
