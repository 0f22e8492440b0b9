package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Failover: the lock node fails over right after the holder's Lock returns, before its write
// reached the replica. The holder stays inside until the second buyer, on the promoted replica,
// is inside too; the second stays until the holder is done. The lease is 4 × TTL and at least
// three times the backend's outage: the lock is lost, not expired. (A container's failover took
// 1.45 s on a loaded machine, past a 4 × TTL lease: a lease guard stopped the holder before it
// was inside.)
var Failover = add(&Scenario{
	Name: steps.Failover, Column: 8,
	What:   "the lock primary dies after the holder's lock write, before replication; replica promoted",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold},
	Move:   arena.FaultFailover,
	Lease:  4, Floor: true,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2 := s.Buyer(), s.Buyer()
		s.FailoverAfterLockWrite(b1)
		b1.Order(arena.HoldUntil(b2.Entered())) // an order that takes no lock stays so too
		s.Wait(b1.Under())
		s.Sleep(T / 10)
		b2.Order(arena.HoldUntil(b1.Done()))
	},
	Key:      "f",
	Label:    "failover",
	Help:     "the next lock write skips the replica, then the primary dies, and that holder stays inside until another buyer is in",
	Lockless: "this step takes no lock, so there is no lock write to lose — nothing armed",
	Pressed:  "failover armed: the next lock write will not reach the replica, then the primary dies, and that holder stays inside until another buyer is in",
	// a fair lock failed over while buyers wait in its line keeps them behind the stricken holder
	// (the replica's line names it first) until its lease guard stops it: the key waits for a
	// lock nobody waits for, as the scenario plays it
	Quiet: true,
	Armed: "failover armed: the next lock write will not reach B",
})
