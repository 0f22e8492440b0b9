package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Partition: the holder's link to the lock server goes down inside its work, until the second
// buyer, who comes 2.4 TTL after the holder got in, has got in or been refused (at most 6 TTL);
// the holder works on and writes when the link is back (unless its lock stopped it).
var Partition = add(&Scenario{
	Name: steps.Partition, Column: 10,
	What:   "the holder loses its link to the lock server (not to the inventory) inside its work until a second buyer who comes 2.4 × TTL later is in, then writes",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRenewal},
	Move:   arena.FaultPartition,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2 := s.Buyer(), s.Buyer()
		b1.CutInWork()
		b1.Order()
		s.Wait(b1.Under())
		s.Sleep(12 * T / 5)
		b2.Order(arena.HoldUntil(b1.Done()))
	},
	Key:         "i",
	Label:       "partition",
	Help:        "inside its work, its link to the lock server (not to the inventory) is cut until another buyer gets in or, a TTL on, still finds the lock taken (at most 6 × TTL): it works on, and writes when the link is back unless its lock told it to stop",
	Lockless:    "this step takes no lock, so there is no link to a lock server to cut — nothing armed",
	NeedsHolder: true, Pressed: "inside its work, its link to the lock server is cut until another buyer gets in (at most 6 × TTL); the inventory still answers",
	Follows: FollowsUnsold, // a lease guard stopped the order (12+): it returns without writing
})
