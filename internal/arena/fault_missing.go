package arena

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultMissing: the buyer's link to the last lock node is down until it is inside, so a quorum
// lock it takes holds a bare majority. It strikes no record of its own: the refused commands
// show it.
const FaultMissing history.Fault = "missing-node"

var _ = addMove(&Move{
	Fault: FaultMissing, Rank: 13, On: OnBuyer, Explored: true,
	Scenario: steps.Restart, // a quorum's restart scenario is staged with a missing node
	What:     "the buyer's link to the last lock node is down until it is inside",
})

// MissingLastNode keeps the buyer's link to the last lock node down (a connection refused at
// once) until it is inside the critical section: a quorum lock it takes holds only the others.
// On a single node it does nothing.
func MissingLastNode() BuyerOption {
	return func(b *Actor) {
		if len(b.p.lock) < 3 {
			return
		}
		restore := b.p.refuse(len(b.p.lock) - 1)
		b.s.after(b.Entered(), restore)
	}
}
