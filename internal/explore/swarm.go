package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Swarm testing (Groce et al., "Swarm Testing", ISSTA 2012; TigerBeetle's VOPR draws its fault
// probabilities per seed): one fault mix for every program finds what each fault finds alone and
// misses what many of one kind find together. So each seed first draws its own mix — which faults
// are on, how often each strikes, how many buyers — and then its program from that mix: some
// programs are all partitions, others all pauses and lost replies, others have no fault at all.

// Mix is the fault mix a seed drew: the most buyers its program has, and each fault that is on
// with how often it strikes.
type Mix struct {
	Buyers int    `json:"buyers"`
	Rates  []Rate `json:"rates,omitempty"`
}

// Rate is one fault of a mix that is on, and how often it strikes: in Eighths of eight of the
// orders it may be armed on (of the buyers, for a buyer's fault: a skewed clock, a missing node).
// The rates of a mix are tried in their order, and an order takes the first that strikes.
type Rate struct {
	Fault   history.Fault `json:"fault"`
	Eighths int           `json:"eighths"`
}

// rate is how many in eight f strikes in m (0: off).
func (m *Mix) rate(f history.Fault) int {
	for _, r := range m.Rates {
		if r.Fault == f {
			return r.Eighths
		}
	}
	return 0
}

// String says the mix in words: "pause on 1/2 of orders, lost-reply on 1/8; clock-skew on 1/4 of
// buyers; at most 3 buyers".
func (m *Mix) String() string {
	var orders, buyers []string
	for _, r := range m.Rates {
		share := strings.TrimSuffix(TTLs(r.Eighths), " TTL")
		if r.Eighths == Eighth {
			share = "every one"
		}
		w := fmt.Sprintf("%s on %s", r.Fault, share)
		if r.Fault == arena.FaultClockSkew || r.Fault == FaultMissing {
			buyers = append(buyers, w)
		} else {
			orders = append(orders, w)
		}
	}
	var parts []string
	if len(orders) > 0 {
		parts = append(parts, strings.Join(orders, ", ")+" of orders")
	}
	if len(buyers) > 0 {
		parts = append(parts, strings.Join(buyers, ", ")+" of buyers")
	}
	if len(parts) == 0 {
		parts = append(parts, "no fault on")
	}
	return strings.Join(parts, "; ") + "; at most " + vocab.Count(m.Buyers, "buyer", "buyers")
}

// Limits bound what Generate writes.
type Limits struct {
	Buyers int // the most buyers (0: 3)
	Nodes  int // the lock nodes the step takes (a missing node only with 3 or more)
	// Faults are the faults a mix may turn on (nil: every one of Faults; empty: none).
	Faults []history.Fault
}

// rng is seed's source: the same seed, the same draws.
func rng(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x6c6f636b73746570)) // "lockstep"
}

// DrawMix is the fault mix of seed: none to three faults of l on (a quarter of the seeds have
// none), chosen and ordered at random, each striking 1, 2, 4 or 8 in eight; and the most buyers,
// 1 to l.Buyers (2 or more twice as often as 1: a lock is mostly about two).
func DrawMix(seed uint64, l Limits) Mix {
	return drawMix(rng(seed), l)
}

func drawMix(r *rand.Rand, l Limits) Mix {
	if l.Buyers <= 0 {
		l.Buyers = 3
	}
	if l.Faults == nil {
		l.Faults = Faults
	}
	m := Mix{Buyers: 1 + r.IntN(l.Buyers)}
	if m.Buyers == 1 && l.Buyers > 1 && r.IntN(3) > 0 {
		m.Buyers = 2
	}
	on := r.IntN(4)
	for _, i := range r.Perm(len(l.Faults)) {
		if len(m.Rates) == on {
			break
		}
		if f := l.Faults[i]; f != FaultMissing || l.Nodes >= 3 {
			m.Rates = append(m.Rates, Rate{Fault: f, Eighths: []int{1, 2, 4, 8}[r.IntN(4)]})
		}
	}
	return m
}

// Generate writes the program of seed: its mix (DrawMix), then from it 1 to Mix.Buyers buyers of
// 1 or 2 orders each, with random waits and work, each order armed with the first fault of the
// mix whose rate strikes it (at most one move on a lock node a program), and a quiet tail. The
// same seed and limits give the same program.
func Generate(seed uint64, l Limits) Program {
	r := rng(seed)
	m := drawMix(r, l)
	p := Program{Seed: seed, Stock: 1 + r.IntN(4), Tail: QuietTail, Mix: &m}
	nb := 1 + r.IntN(m.Buyers)
	if nb == 1 && m.Buyers > 1 && r.IntN(2) == 0 {
		nb = 2
	}
	nodeMove := false
	for range nb {
		b := Buyer{}
		if r.IntN(Eighth) < m.rate(arena.FaultClockSkew) {
			b.Skew = 3 * Eighth
		}
		if r.IntN(Eighth) < m.rate(FaultMissing) {
			b.Missing = true
		}
		for range 1 + r.IntN(2) {
			o := Order{After: r.IntN(2 * Eighth)}
			if r.IntN(2) == 0 {
				o.Work = r.IntN(Eighth + 1)
			}
			for _, rt := range m.Rates {
				if !slices.Contains(OrderFaults, rt.Fault) || node(rt.Fault) && nodeMove || r.IntN(Eighth) >= rt.Eighths {
					continue
				}
				o.Fault, nodeMove = rt.Fault, nodeMove || node(rt.Fault)
				if o.Fault == arena.FaultUnlockRace {
					o.Gap = r.IntN(3)
				}
				break
			}
			b.Orders = append(b.Orders, o)
			if last(o.Fault) {
				break // a crash or a second request ends its buyer's orders
			}
		}
		p.Buyers = append(p.Buyers, b)
	}
	return p
}
