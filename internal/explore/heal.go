package explore

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// After a program's faults, a quiet tail (Program.Tail) in which nothing strikes, as VOPR ends a
// seed with a liveness phase: a lock that only refused while the faults struck recovers in it; one
// that stays stuck, or turns every order away, does not.

// Recovery is how a program's quiet tail went: whether an order of its buyer sold, and when.
type Recovery struct {
	Recovers bool `json:"recovers"`
	// After is the time from the tail's first order to the one that sold (Recovers), Tail how
	// long the tail's orders went on (not Recovers).
	After time.Duration `json:"after_ns,omitempty"`
	Tail  time.Duration `json:"tail_ns,omitempty"`
	TTL   time.Duration `json:"ttl_ns"`
}

// RecoveryOf reads from h, a run of p, how its quiet tail went: nil when p has none, or the tail
// ordered nothing (the shelf was empty by then: there was nothing left to recover for).
func RecoveryOf(p Program, h *history.History) *Recovery {
	if p.Tail <= 0 || h == nil {
		return nil
	}
	n := len(p.Buyers) + 1 // the tail's buyer
	start, end := time.Duration(-1), time.Duration(0)
	for _, r := range h.Records {
		if r.Buyer != n {
			continue
		}
		switch {
		case r.Kind == history.RecOrder && r.What == history.OrderBegin && start < 0:
			start = r.At
		case r.Kind == history.RecOrder && r.What == history.OrderEnd:
			end = r.At
		case r.Kind == history.RecStock && (r.What == history.StockWrite || r.What == history.StockSell):
			return &Recovery{Recovers: true, After: r.At - start, TTL: h.Timing.TTL}
		}
	}
	if start < 0 {
		return nil
	}
	return &Recovery{Tail: end - start, TTL: h.Timing.TTL}
}

// eighths is d in eighths of the TTL, to the nearest.
func (r Recovery) eighths(d time.Duration) int {
	if r.TTL <= 0 {
		return 0
	}
	return int((d*Eighth + r.TTL/2) / r.TTL)
}

// String says it: "recovers at once", "recovers 1/2 TTL into the quiet tail", "does not recover:
// no order sold in 4 TTL of quiet".
func (r Recovery) String() string {
	switch {
	case !r.Recovers:
		return fmt.Sprintf("does not recover: no order sold in %s of quiet", TTLs(max(r.eighths(r.Tail), 1)))
	case r.eighths(r.After) == 0:
		return "recovers at once when the faults stop"
	}
	return fmt.Sprintf("recovers %s into the quiet tail", TTLs(r.eighths(r.After)))
}

// liveness reports whether k says the shop stopped selling (what the quiet tail asks about).
func liveness(k vocab.Kind) bool { return k == vocab.Stuck || k == vocab.LostSales }

// withoutNodeMoves is p without its moves on a lock node (failover, restart), and whether it had
// any.
func withoutNodeMoves(p Program) (Program, bool) {
	q, had := p.Clone(), false
	for i := range q.Buyers {
		for k, o := range q.Buyers[i].Orders {
			if node(o.Fault) {
				q.Buyers[i].Orders[k].Fault, had = "", true
			}
		}
	}
	return q, had
}

// safeWords says a refusal the lab's node fault caused: what the node move did, from p's faults.
func safeWords(p Program) string {
	what := "restarted its lock node without persistence"
	for _, b := range p.Buyers {
		if slices.ContainsFunc(b.Orders, func(o Order) bool { return o.Fault == arena.FaultFailover }) {
			what = "failed its lock node over to a replica"
		}
	}
	return "after the lab " + what + ", the lock turned orders away rather than sell on a lock it could not prove; without that fault the same program sells"
}
