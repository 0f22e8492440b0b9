package arena

import (
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultClockSkew: the process's wall clock runs ahead of the machine's (Skewed).
const FaultClockSkew history.Fault = "clock-skew"

var _ = addMove(&Move{
	Fault: FaultClockSkew, Rank: 12, On: OnBuyer, Explored: true, Scenario: steps.ClockSkew,
	What: "the process's wall clock runs ahead of the machine's",
})

// Skewed runs the buyer's wall clock (Proc.Now) d ahead of the machine's, and records it (a
// clock-skew fault on the buyer), so that the history and every screen drawn from it show whose
// clock is wrong.
func Skewed(d time.Duration) BuyerOption {
	return func(b *Actor) {
		b.p.mu.Lock()
		b.p.skew = d
		b.p.mu.Unlock()
		b.s.a.recordNow(history.Record{Kind: history.RecFault, What: string(FaultClockSkew), Buyer: b.N,
			Says: fmt.Sprintf("its wall clock runs %s ahead of the machine's", d)})
	}
}
