// Package shopcheck checks one run's shop history for linearizability with porcupine
// (github.com/anishathalye/porcupine): a second, independent checker beside the lab's referee,
// as Jepsen pairs a history with a checker. It knows nothing of locks, steps or Redis: only what
// each order read from the inventory, what it wrote, and the inventory's sequence numbers.
//
// Each order is one operation of a register whose value is the stock: "read the stock, then
// write what was read minus one (or write nothing)". The history is linearizable when the orders
// can be put in one one-at-a-time order that respects the inventory's order (an order that wrote
// before another read comes first) and in which each read sees what the order before it left.
package shopcheck

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Op is one order's dealings with the stock, in the inventory's order. Hazard: the sequence
// numbers are the only clock the checker knows; they must be the inventory's own (each stock
// command takes a fresh one, strictly increasing), not times observed by the buyers, or the
// checker would order the orders wrongly and give a wrong verdict with confidence.
type Op struct {
	Order    int // arena-wide order id, from 1
	Buyer    int
	ReadSeq  int64 // the inventory's sequence number of the read its write was computed from (the order's last read before its write); 0 if the order never read
	Read     int   // the stock it read
	WriteSeq int64 // the sequence number of its write attempt; 0 if it attempted none
	Wrote    int   // the stock it wrote (when WriteSeq != 0 and !Refused)
	Refused  bool  // the inventory refused the write (a stale fencing token): nothing changed
}

// Verdict is what the checker found. Hazard: Linearizable is about the shop's stock alone: a run
// whose lock failed (two orders inside together) is still linearizable when the inventory
// refused the stale write, and saying why that is not an oversold unit is the caller's business.
type Verdict struct {
	Linearizable bool
	Why          string // one plain sentence: for a non-linearizable history, name two orders whose reads and writes cannot be put in any one-at-a-time order consistent with the inventory's order (e.g. "orders of buyer 1 and buyer 2 both read 3 and both wrote 2: no order of one sale after the other explains it"); for a linearizable one, ""
}

// Check decides whether ops, with the shelf starting at initial, is linearizable as a sequence of
// atomic "read the stock, then write the value read − 1 (or write nothing when refused or not
// attempted)" operations: each op is invoked at ReadSeq and returns at WriteSeq (an op with no
// write returns at ReadSeq+0.5, i.e. right after its read; an op with no read is not part of the
// history). The model's state is the stock; an op is legal in a state s iff its Read == s, and it
// moves the state to Wrote (or leaves it when Refused or no write).
//
// Timestamps: porcupine takes integer call and return times and treats [call, return] as a
// closed interval. Check calls an op at 2·ReadSeq and returns it at 2·WriteSeq+1, or at
// 2·ReadSeq+1 when it wrote nothing (the "ReadSeq+0.5"). Calls are even and returns odd, so no
// call ever ties with a return and every order is strict: an op that wrote nothing is over
// before the inventory's next command, and the atomic sale (ReadSeq == WriteSeq) spans [2s, 2s+1],
// an instant no other command falls inside.
//
// The model trusts Wrote: it does not check that an order wrote Read − 1, only that the writes and
// reads can be ordered one at a time. A history that breaks the inventory's own rules (a negative
// or too large sequence number, a write before its read, a sequence number used twice) cannot be
// explained at all: Check says it is not linearizable and its Why says what is malformed.
//
// Why: when the history is not linearizable, Check shrinks it to a small set of orders that are
// contradictory on their own, whatever the shelf held before them (dropping orders from the
// latest back, keeping those without which the rest could be explained): usually two orders, or,
// when the orders agree with one another but not with the shelf, one order and the shelf's
// initial stock. It describes them, and says their sequence numbers.
//
// Hazard: Check has no time limit. Linearizability checking is NP-complete and porcupine's search
// can grow exponentially with the number of orders in flight at once; the lab's orders mostly run
// one at a time, or a few at once where the lock fails, which porcupine checks in microseconds.
// A timeout would turn a verdict into "unknown" and the checker into a coin toss, so there is
// none: a caller who feeds it thousands of concurrent orders must bound that itself. Explaining
// a non-linearizable history costs a few more checks per order (under 1 ms for 50 orders).
//
// Hazard: an op with no read (ReadSeq == 0) is dropped even if it wrote: a write computed from no
// read is not a sale, and the lab's orders never make one. A recorder that loses an order's read
// but keeps its write hides that write from the checker.
func Check(initial int, ops []Op) Verdict {
	var kept []Op
	for _, op := range ops {
		if op.ReadSeq != 0 {
			kept = append(kept, op)
		}
	}
	if why := malformed(kept); why != "" {
		return Verdict{Why: why}
	}
	if check(&initial, kept) {
		return Verdict{Linearizable: true}
	}
	return Verdict{Why: explain(initial, kept)}
}

// maxSeq keeps 2·seq+1 inside an int64.
const maxSeq = (math.MaxInt64 - 1) / 2

// malformed says what breaks the inventory's rules in ops (all of which read), or "".
func malformed(ops []Op) string {
	used := make(map[int64]Op, 2*len(ops))
	claim := func(op Op, seq int64, what string) string {
		if seq < 0 || seq > maxSeq {
			return fmt.Sprintf("the history is malformed: %s has %s sequence number %d, outside 1..%d", name(op), what, seq, int64(maxSeq))
		}
		if other, ok := used[seq]; ok {
			return fmt.Sprintf("the history is malformed: %s and %s both claim sequence number %d", name(other), name(op), seq)
		}
		used[seq] = op
		return ""
	}
	for _, op := range ops {
		if why := claim(op, op.ReadSeq, "a read"); why != "" {
			return why
		}
		if op.WriteSeq == 0 || op.WriteSeq == op.ReadSeq { // the atomic sale shares its read's number
			continue
		}
		if op.WriteSeq < op.ReadSeq {
			return fmt.Sprintf("the history is malformed: %s wrote at sequence number %d, before the read at %d it computed from", name(op), op.WriteSeq, op.ReadSeq)
		}
		if why := claim(op, op.WriteSeq, "a write"); why != "" {
			return why
		}
	}
	return ""
}

// shelf is the model's state: the stock, or any stock at all (free) before the first op of a
// history checked without its initial stock.
type shelf struct {
	free bool
	n    int
}

// move is an op's input to the model: what it read, and what it left.
type move struct {
	read   int
	writes bool // a write the inventory accepted
	wrote  int
}

func (op Op) move() move {
	return move{read: op.Read, writes: op.WriteSeq != 0 && !op.Refused, wrote: op.Wrote}
}

// model is the stock as a register read and then written at once; it starts at *initial, or at
// any stock when initial is nil.
func model(initial *int) porcupine.Model {
	start := shelf{free: true}
	if initial != nil {
		start = shelf{n: *initial}
	}
	return porcupine.Model{
		Init: func() any { return start },
		Step: func(state, input, _ any) (bool, any) {
			s, m := state.(shelf), input.(move)
			if !s.free && s.n != m.read {
				return false, nil
			}
			if m.writes {
				return true, shelf{n: m.wrote}
			}
			return true, shelf{n: m.read}
		},
		Hash: func(state any) uint64 {
			s := state.(shelf)
			if s.free {
				return math.MaxUint64
			}
			return uint64(s.n)
		},
		DescribeOperation: func(input, _ any) string {
			m := input.(move)
			if m.writes {
				return fmt.Sprintf("%d → %d", m.read, m.wrote)
			}
			return fmt.Sprintf("read %d", m.read)
		},
		DescribeState: func(state any) string {
			if s := state.(shelf); !s.free {
				return fmt.Sprint(s.n)
			}
			return "any"
		},
	}
}

// history turns well-formed ops (all of which read) into porcupine's operations: called at
// 2·ReadSeq, returned at 2·WriteSeq+1, or 2·ReadSeq+1 without a write.
func history(ops []Op) []porcupine.Operation {
	h := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		ret := 2*op.ReadSeq + 1
		if op.WriteSeq != 0 {
			ret = 2*op.WriteSeq + 1
		}
		h[i] = porcupine.Operation{ClientId: i, Input: op.move(), Call: 2 * op.ReadSeq, Return: ret}
	}
	return h
}

// check says whether ops are linearizable from *initial, or from some stock when initial is nil.
// Without a timeout porcupine always answers Ok or Illegal.
func check(initial *int, ops []Op) bool {
	return porcupine.CheckOperations(model(initial), history(ops))
}

// explain names a small set of ops that is not linearizable on its own, from a non-linearizable
// history. It prefers orders to the shelf: if the history cannot be explained even from some
// other initial stock, it leaves the shelf out and checks every set from any stock; only if it
// can (the orders agree with one another, not with the shelf) does it keep the initial stock.
// Then it drops ops from the latest read back, each only if what is left still cannot be
// explained, and goes round again until nothing more can be dropped. The set left is
// contradictory by itself, each of its ops was needed when it was tried, and it ends as early in
// the run as that allows.
func explain(initial int, ops []Op) string {
	core := slices.Clone(ops)
	slices.SortStableFunc(core, func(a, b Op) int { return cmpSeq(a.ReadSeq, b.ReadSeq) })
	start := &initial
	if !check(nil, core) {
		start = nil
	}
	for changed := true; changed; {
		changed = false
		for i := len(core) - 1; i >= 0; i-- {
			if rest := slices.Delete(slices.Clone(core), i, i+1); !check(start, rest) {
				core, changed = rest, true
			}
		}
	}
	return describe(initial, start != nil, core)
}

func cmpSeq(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// describe says in one sentence why core (by ReadSeq), from the shelf's initial stock if
// withShelf, cannot be explained.
func describe(initial int, withShelf bool, core []Op) string {
	if withShelf && len(core) == 1 {
		a := core[0]
		return fmt.Sprintf("%s read %d at sequence number %d, but the shelf started at %d", name(a), a.Read, a.ReadSeq, initial)
	}
	if !withShelf && len(core) == 2 {
		a, b := core[0], core[1]
		am, bm := a.move(), b.move()
		if am.writes && bm.writes && a.Read == b.Read {
			wrote := fmt.Sprintf("both wrote %d", a.Wrote)
			if a.Wrote != b.Wrote {
				wrote = fmt.Sprintf("wrote %d and %d", a.Wrote, b.Wrote)
			}
			return fmt.Sprintf("%s both read %d and %s (reads at %d and %d, writes at %d and %d): no order of one sale after the other explains it", pair(a, b), a.Read, wrote, a.ReadSeq, b.ReadSeq, a.WriteSeq, b.WriteSeq)
		}
		if am.writes && a.WriteSeq < b.ReadSeq {
			return fmt.Sprintf("%s read %d at sequence number %d, after %s had written %d at %d: no order of one after the other explains it", name(b), b.Read, b.ReadSeq, name(a), a.Wrote, a.WriteSeq)
		}
	}
	parts := make([]string, len(core))
	for i, op := range core {
		parts[i] = fmt.Sprintf("%s (%s)", name(op), dealings(op))
	}
	from := ""
	if withShelf {
		from = fmt.Sprintf(", starting from the shelf's %d,", initial)
	}
	return fmt.Sprintf("%s%s cannot be put in any one-at-a-time order consistent with the inventory's order", join(parts), from)
}

// name says "order 4 of buyer 1".
func name(op Op) string {
	return fmt.Sprintf("order %d of buyer %d", op.Order, op.Buyer)
}

// pair says "order 4 of buyer 1 and order 5 of buyer 2", or "orders 4 and 5 of buyer 1".
func pair(a, b Op) string {
	if a.Buyer == b.Buyer {
		return fmt.Sprintf("orders %d and %d of buyer %d", a.Order, b.Order, a.Buyer)
	}
	return name(a) + " and " + name(b)
}

// dealings says "read 3 at 1, wrote 2 at 4".
func dealings(op Op) string {
	s := fmt.Sprintf("read %d at %d", op.Read, op.ReadSeq)
	switch {
	case op.WriteSeq == 0:
	case op.Refused:
		s += fmt.Sprintf(", write refused at %d", op.WriteSeq)
	default:
		s += fmt.Sprintf(", wrote %d at %d", op.Wrote, op.WriteSeq)
	}
	return s
}

// join says "a, b and c".
func join(parts []string) string {
	if len(parts) <= 1 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
