package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Restart: lock node 1 restarts, forgetting every key, once the holder's Lock has returned
// holding a key it wrote there. On a quorum the holder missed the last node when it locked (that
// node was out of its reach), so node 1 was one of the only two it holds. A second buyer comes
// once the node is back; the holder stays inside until the second is inside too, and the second
// until the holder is done. The lease is 4 × TTL and at least three times the backend's outage:
// the lock is forgotten, not expired. The node the holder misses refuses it at once, so its lock
// does not wait out a quorum lock's per-node timeout.
var Restart = add(&Scenario{
	Name: steps.Restart, Column: 13,
	What:   "a lock node restarts without persistence and forgets the lock while its holder works",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold},
	Move:   arena.FaultRestart,
	Lease:  4, Floor: true,
	Play: func(s *arena.Stage) {
		b1 := s.Buyer(arena.MissingLastNode())
		b2 := s.Buyer()
		s.RestartAfterLockWrite(b1)
		b1.Order(arena.HoldUntil(b2.Entered())) // an order that takes no lock stays so too
		s.Wait(s.Restarted())
		b2.Order(arena.HoldUntil(b1.Done()))
	},
})
