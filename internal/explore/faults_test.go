package explore

import (
	"slices"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// seedOrder is Faults as it was when the explorer's seeds were first written down (README's
// commands, the grades' exploring): a seed draws its mix in this order.
var seedOrder = []history.Fault{"error", "crash", "slow", "pause", "unlock-race", "failover", "reentrant",
	"partition", "second", "restart", "lost-reply", "clock-skew", "missing-node"}

// TestFaultsKeepTheSeedsOrder: the explorer's fault lists derive from the arena's moves, and keep
// the order a seed's programs were drawn in; a new move goes after them (its Rank), or every
// seed written down draws other programs.
func TestFaultsKeepTheSeedsOrder(t *testing.T) {
	if len(Faults) < len(seedOrder) || !slices.Equal(Faults[:len(seedOrder)], seedOrder) {
		t.Errorf("Faults = %v, want %v first", Faults, seedOrder)
	}
	for _, f := range Faults {
		if slices.Contains(OrderFaults, f) != (f != "clock-skew" && f != "missing-node") {
			t.Errorf("OrderFaults = %v: %s is misplaced", OrderFaults, f)
		}
	}
}
