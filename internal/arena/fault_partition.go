package arena

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultPartition: inside its work, the process loses its links to the lock nodes until its
// counterpart acts.
const FaultPartition history.Fault = "partition"

var _ = addMove(&Move{
	Fault: FaultPartition, Rank: 8, On: OnOrder, Explored: true, Scenario: steps.Partition,
	What: "inside its work, the process loses its links to the lock nodes until its counterpart acts",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.CutInWork(); return nil },
})

// CutInWork cuts, inside the buyer's work, its links to the lock nodes (not to the inventory)
// until its counterpart has acted (at most 6 × TTL); it works on, and writes once the link is
// back (unless its lock stopped it).
func (b *Actor) CutInWork() {
	cap := capWork * b.s.a.t.TTL
	says := "its link to the lock server is cut (not to the inventory), " + b.s.a.lasting(cap) + "; it keeps working"
	b.arm(FaultPartition, inWork, cap, says, func(w *work, x *armedFault) error {
		w.s.p.partition(x.cap, x.until(), counterpart)
		w.cut = true
		return nil
	})
}
