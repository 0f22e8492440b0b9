// Package explore finds a lock's breaks by itself, as TigerBeetle's VOPR and FoundationDB's
// simulation do: it writes random programs of the arena's named moves from a seed (Generate),
// plays each in virtual time on the embedded backend (Run), has the referee judge it for every
// kind, and shrinks a program that breaks the lock to the smallest that still breaks it the same
// way (Shrink). A program is data (Program): a test can hold a found one as a regression case, and
// a seed gives the same program every time.
//
// lab explore builds this package's test binary (with a learner's package laid over it, as lab
// grade does internal/matrix's) and runs TestExplore, which reads what to explore from
// $LOCKSTEP_EXPLORE and writes what it found to the file that names (Explore).
package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Scenario is the name an explored program's history carries: the referee judges it for every
// kind (Program.Judged).
const Scenario vocab.Scenario = "explore"

// Eighth is the program's unit of time: an eighth of the step's TTL. Arrivals and work are whole
// eighths, so two buyers' moments differ by a whole eighth or coincide (and then Play sets them
// apart by a few microseconds: two goroutines at one simulated instant race).
const Eighth = 8

// Program is one random story of buyers and faults, as data: how many units are on the shelf, and
// each buyer's orders, each with when it comes, how long it works, and the fault armed for it;
// then a quiet tail. Times are in eighths of the step's TTL. Hazard: a program is played as
// written, whatever the lock does; a fault armed for an order strikes at the first point of its
// kind from that order on (an order refused before its work carries its work's fault to the
// next), and one that never found its point is no fault at all (the run says which struck:
// Struck).
type Program struct {
	// Seed is the seed Generate wrote it from (0: written by hand or shrunk from one).
	Seed   uint64  `json:"seed,omitempty"`
	Stock  int     `json:"stock"`
	Buyers []Buyer `json:"buyers"`
	// Tail is how long the quiet tail lasts, in eighths of a TTL (0: none): once every order of
	// the program has returned, nothing strikes, and a buyer of its own orders every half TTL
	// until an order sells, the shelf is empty or the tail is over. Whether the shop recovers is
	// read from it (Recovery).
	Tail int `json:"tail,omitempty"`
	// Mix is the fault mix Generate drew for the seed before the program (nil: written by hand).
	// It says how the program came to be; playing it reads nothing of it.
	Mix *Mix `json:"mix,omitempty"`
}

// QuietTail is the tail Generate gives a program: 4 TTLs, time for any lease to run out twice.
const QuietTail = 4 * Eighth

// Buyer is one buyer of a program: its orders, one after another, and how it is set up.
type Buyer struct {
	// Skew runs the buyer's wall clock (Proc.Now) this many eighths of a TTL ahead.
	Skew int `json:"skew,omitempty"`
	// Missing keeps its link to the last lock node down until it is inside (a quorum lock it takes
	// holds only the others); nothing on a single node.
	Missing bool    `json:"missing,omitempty"`
	Orders  []Order `json:"orders"`
}

// Order is one order of a buyer.
type Order struct {
	// After is how many eighths of a TTL after the buyer's previous order returned (the first:
	// after the start) it comes.
	After int `json:"after,omitempty"`
	// Work is how many eighths of a TTL its work lasts at least (0: the step's Work).
	Work int `json:"work,omitempty"`
	// Fault is the move armed for it ("" for none), Gap the Unlock command an unlock-race freezes
	// before (see arena.Actor.FreezeBeforeUnlockCommand).
	Fault history.Fault `json:"fault,omitempty"`
	Gap   int           `json:"gap,omitempty"`
}

// FaultMissing is a buyer whose link to the last lock node is down until it is inside
// (Buyer.Missing): on a quorum lock, it holds a bare majority.
const FaultMissing = arena.FaultMissing

// OrderFaults are the moves a program may arm on an order, in the arena's names and order: every
// explored move that strikes in an order or on a node.
var OrderFaults = faults(func(m *arena.Move) bool { return m.Arm != nil })

// Faults is every fault a program may have: the moves armed on an order, and those a buyer is
// set up with (a wall clock 3/8 TTL ahead, a missing lock node).
var Faults = faults(func(m *arena.Move) bool { return true })

// faults is every explored move that keep says yes to, in the arena's order.
func faults(keep func(m *arena.Move) bool) []history.Fault {
	var out []history.Fault
	for _, m := range arena.Moves() {
		if m.Explored && keep(m) {
			out = append(out, m.Fault)
		}
	}
	return out
}

// node reports whether f strikes a lock node rather than the process (one such move a program).
func node(f history.Fault) bool {
	m := arena.MoveOf(f)
	return m != nil && m.On == arena.OnNode
}

// last reports whether f must be its buyer's last order: a crash ends the process, and a second
// request adds an order of its own.
func last(f history.Fault) bool {
	m := arena.MoveOf(f)
	return m != nil && m.Last
}

// ScenarioOf is the matrix's scenario that stages f, as a grade's row shows it.
func ScenarioOf(f history.Fault) vocab.Scenario {
	if m := arena.MoveOf(f); m != nil {
		return m.Scenario
	}
	return vocab.Scenario(f)
}

// Scenarios are the scenarios that stage p's faults (contention, for a program with none).
func (p Program) Scenarios() []vocab.Scenario {
	var out []vocab.Scenario
	add := func(f history.Fault) {
		if sc := ScenarioOf(f); !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	for _, b := range p.Buyers {
		if b.Skew > 0 {
			add(arena.FaultClockSkew)
		}
		if b.Missing {
			add(FaultMissing)
		}
		for _, o := range b.Orders {
			if o.Fault != "" {
				add(o.Fault)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "contention")
	}
	return out
}

// Size is the program's buyers and faults (a buyer's skewed clock and missing node count as one
// each).
func (p Program) Size() (buyers, faults int) {
	for _, b := range p.Buyers {
		if b.Skew > 0 {
			faults++
		}
		if b.Missing {
			faults++
		}
		for _, o := range b.Orders {
			if o.Fault != "" {
				faults++
			}
		}
	}
	return len(p.Buyers), faults
}

// Clone is a deep copy of p.
func (p Program) Clone() Program {
	q := p
	q.Buyers = make([]Buyer, len(p.Buyers))
	for i, b := range p.Buyers {
		b.Orders = slices.Clone(b.Orders)
		q.Buyers[i] = b
	}
	return q
}

// Duration is an amount of eighths of a TTL in time.
func Duration(eighths int, ttl time.Duration) time.Duration {
	return time.Duration(eighths) * ttl / Eighth
}

// TTLs says an amount of eighths of a TTL in words: "at once", "1/4 TTL", "1 3/8 TTL".
func TTLs(eighths int) string {
	if eighths == 0 {
		return "0"
	}
	whole, rest := eighths/Eighth, eighths%Eighth
	frac := ""
	if rest > 0 {
		n, d := rest, Eighth
		for n%2 == 0 {
			n, d = n/2, d/2
		}
		frac = fmt.Sprintf("%d/%d", n, d)
	}
	switch {
	case whole == 0:
		return frac + " TTL"
	case frac == "":
		return fmt.Sprintf("%d TTL", whole)
	}
	return fmt.Sprintf("%d %s TTL", whole, frac)
}

// What says the program in one sentence, for the history's header.
func (p Program) What() string {
	b, f := p.Size()
	s := fmt.Sprintf("a random program: %s against %s, %s", vocab.Count(b, "buyer", "buyers"), vocab.Count(p.Stock, "unit", "units"), vocab.Count(f, "fault", "faults"))
	if p.Seed != 0 {
		s += fmt.Sprintf(", from seed %d", p.Seed)
	}
	return s
}

// Lines says the program in words, a line a buyer, in the lab's words for each fault (says: the
// words a fault's move said as it struck, by buyer and fault, from the run; a fault not in it
// never struck).
func (p Program) Lines(says map[Strike]string) []string {
	out := []string{vocab.Count(p.Stock, "unit", "units") + " on the shelf"}
	for i, b := range p.Buyers {
		n := i + 1
		var parts []string
		if b.Skew > 0 {
			parts = append(parts, fmt.Sprintf("its wall clock runs %s ahead", TTLs(b.Skew)))
		}
		if b.Missing {
			parts = append(parts, "its link to the last lock node is down until it is inside")
		}
		for k, o := range b.Orders {
			when := "at the start"
			switch {
			case k == 0 && o.After > 0:
				when = TTLs(o.After) + " after the start"
			case k > 0 && o.After == 0:
				when = "as soon as its previous order returned"
			case k > 0:
				when = TTLs(o.After) + " after its previous order returned"
			}
			s := fmt.Sprintf("its %s order comes %s", arena.Ordinal(k+1), when)
			if o.Work > 0 {
				s += fmt.Sprintf(" and works %s", TTLs(o.Work))
			}
			if o.Fault != "" {
				w, ok := says[Strike{Buyer: n, Fault: o.Fault}]
				switch {
				case ok:
					s += fmt.Sprintf("; %s: %s", o.Fault, w)
				default:
					s += fmt.Sprintf("; %s armed, and it never struck", o.Fault)
				}
			}
			parts = append(parts, s)
		}
		out = append(out, fmt.Sprintf("buyer %d: %s", n, strings.Join(parts, "; ")))
	}
	if p.Tail > 0 {
		out = append(out, fmt.Sprintf("then a quiet tail of %s: nothing strikes, and buyer %d orders every 1/2 TTL until an order sells", TTLs(p.Tail), len(p.Buyers)+1))
	}
	return out
}

// Strike is a fault that struck a buyer, as a history records it.
type Strike struct {
	Buyer int
	Fault history.Fault
}

// Struck is what each fault said as it struck in h, by buyer and fault (the first time).
func Struck(h *history.History) map[Strike]string {
	out := map[Strike]string{}
	if h == nil {
		return out
	}
	for _, r := range h.Records {
		if r.Kind != history.RecFault {
			continue
		}
		k := Strike{Buyer: r.Buyer, Fault: history.Fault(r.What)}
		if _, ok := out[k]; !ok {
			out[k] = r.Says
		}
	}
	return out
}
