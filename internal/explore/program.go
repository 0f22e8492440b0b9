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
	"math/rand/v2"
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
// each buyer's orders, each with when it comes, how long it works, and the fault armed for it.
// Times are in eighths of the step's TTL. Hazard: a program is played as written, whatever the lock
// does; a fault armed for an order strikes at the first point of its kind from that order on (an
// order refused before its work carries its work's fault to the next), and one that never found
// its point is no fault at all (the run says which struck: Struck).
type Program struct {
	// Seed is the seed Generate wrote it from (0: written by hand or shrunk from one).
	Seed   uint64  `json:"seed,omitempty"`
	Stock  int     `json:"stock"`
	Buyers []Buyer `json:"buyers"`
}

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

// Faults is every move a program may arm on an order, in the arena's names.
var Faults = []history.Fault{
	arena.FaultError, arena.FaultCrash, arena.FaultSlow, arena.FaultPause, arena.FaultUnlockRace,
	arena.FaultFailover, arena.FaultReentrant, arena.FaultPartition, arena.FaultSecond,
	arena.FaultRestart, arena.FaultLostReply,
}

// node reports whether f strikes a lock node rather than the process (one such move a program).
func node(f history.Fault) bool { return f == arena.FaultFailover || f == arena.FaultRestart }

// last reports whether f must be its buyer's last order: a crash ends the process, and a second
// request adds an order of its own.
func last(f history.Fault) bool { return f == arena.FaultCrash || f == arena.FaultSecond }

// Limits bound what Generate writes.
type Limits struct {
	Buyers int // the most buyers (0: 3)
	Nodes  int // the lock nodes the step takes (a missing node only with 3 or more)
	// Faults are the moves a program may arm (nil: every one of Faults; empty: none).
	Faults []history.Fault
}

// Generate writes the program of seed: the same seed and limits give the same program.
func Generate(seed uint64, l Limits) Program {
	if l.Buyers <= 0 {
		l.Buyers = 3
	}
	if l.Faults == nil {
		l.Faults = Faults
	}
	r := rand.New(rand.NewPCG(seed, 0x6c6f636b73746570)) // "lockstep"
	p := Program{Seed: seed, Stock: 1 + r.IntN(4)}
	nb := 1 + r.IntN(l.Buyers)
	if nb == 1 && l.Buyers > 1 && r.IntN(2) == 0 {
		nb = 2 // a lock is mostly about two
	}
	for range nb {
		b := Buyer{}
		if r.IntN(8) == 0 {
			b.Skew = 3 * Eighth
		}
		if l.Nodes >= 3 && r.IntN(3) == 0 {
			b.Missing = true
		}
		for range 1 + r.IntN(2) {
			o := Order{After: r.IntN(2 * Eighth)}
			if r.IntN(2) == 0 {
				o.Work = r.IntN(Eighth + 1)
			}
			b.Orders = append(b.Orders, o)
		}
		p.Buyers = append(p.Buyers, b)
	}
	nodeMove := false
	for range r.IntN(3) {
		if len(l.Faults) == 0 {
			break
		}
		f := l.Faults[r.IntN(len(l.Faults))]
		bi := r.IntN(len(p.Buyers))
		b := &p.Buyers[bi]
		k := r.IntN(len(b.Orders))
		if node(f) && nodeMove || b.Orders[k].Fault != "" {
			continue
		}
		nodeMove = nodeMove || node(f)
		if last(f) {
			b.Orders = b.Orders[:k+1]
		}
		b.Orders[k].Fault = f
		if f == arena.FaultUnlockRace {
			b.Orders[k].Gap = r.IntN(3)
		}
	}
	// A crash or a second request ends its buyer's orders.
	for i := range p.Buyers {
		b := &p.Buyers[i]
		for k, o := range b.Orders {
			if last(o.Fault) {
				b.Orders = b.Orders[:k+1]
				break
			}
		}
	}
	return p
}

// Size is the program's buyers and faults.
func (p Program) Size() (buyers, faults int) {
	for _, b := range p.Buyers {
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
