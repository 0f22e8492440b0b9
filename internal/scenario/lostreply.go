package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// LostReply: the indeterminate acquire. The first buyer's Lock write lands on the server, but its
// reply is lost: its client times out a quarter TTL later and, as go-redis does with a command
// that timed out, sends it again. A second buyer comes a tenth of a TTL after the write, while any
// lease it set has most of its time to run: a Lock that gives up sooner than that (a try-once lock,
// the aspect's 30 short tries: under half a TTL) is turned away, whatever the machine's pace. A
// lock without a TTL now stays for ever (stuck), one with a TTL turns buyers away until it runs out
// (lost-sales: the first buyer is turned away by its own lock), a lock that waits waits it out,
// and one that retries under the same owner takes its own lock back.
//
// It judges stuck and lost-sales: what a lock nobody knows it holds does to the shop. Overlap
// cannot come of it (the write landed: the lock is held, by nobody who knows).
var LostReply = add(&Scenario{
	Name: steps.LostReply, Column: 15,
	What:   "the holder's lock write lands, but its reply is lost: its client times out and sends it again",
	Judges: []steps.Kind{steps.Stuck, steps.LostSales},
	Move:   arena.FaultLostReply,
	// A lease of 4 × TTL: the aspect's 30 short tries are 0.3 of it plus 30 round trips, and on a
	// real server under load the round trips alone came to a TTL (side_aspect ✓ there once).
	Lease: 4,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2 := s.Buyer(), s.Buyer()
		lost := b1.LoseLockReply()
		b1.Order()
		s.Wait(lost, b1.Done()) // an order that takes no lock has no reply to lose
		s.Sleep(T / 10)
		b2.Order()
	},
	Key: "y", Label: "lost reply",
	Help:        "the reply to its next lock write is lost: the write lands, its client times out (TTL/4) and sends it again",
	Lockless:    "this step takes no lock, so there is no lock reply to lose — nothing armed",
	NeedsHolder: true, Pressed: "the reply to its next lock write will be lost: the write lands, its client times out and sends it again",
})
