package referee

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// Live is what the arena asks of a run while it plays, to stage it (who is inside, who holds which
// keys, who is releasing, the shelf). Its answers are the records' facts: the keys of each lock
// node and the holds Lock calls' writes make of them (which keys a granted Lock wrote, and whether
// they are still there), the calls under way, each order's reads and writes, the shelf as last
// written. They never read what a checker decided (an overlap, a foreign release, a renewal of
// another's lock, a buyer turned away, starved, idle, flood, stuck): the verdict's state is the
// Referee's own, outside facts, and nothing that keeps facts reads it. So a change to how a kind
// is judged cannot change how a scenario plays. Hazard: a question added here must read facts
// alone; the arena's waits read only the events of facts too (arena's signals: enter, write,
// work, done, waiting, refused, free, acquired), never a violation's.
type Live interface {
	// Inside is the buyer whose order is inside its critical section (the first in, if several
	// are), or else the buyer of the first active hold; 0 if none.
	Inside() int
	// Releasing tells whether buyer has an Unlock call under way (begun, not returned).
	Releasing(buyer int) bool
	// Shelf is the stock as last written.
	Shelf() int
	// SoldOut reports whether the shop is done selling.
	SoldOut() bool
	// HoldKeys is the keys (by node) of buyer's active hold.
	HoldKeys(buyer int) map[int][]string
	// HeldKey is the first key (by name) of an active hold on node, and its holder.
	HeldKey(node int) (key string, owner int, ok bool)
	// Values is every key of lock node node as last seen: its value print.
	Values(node int) map[string]string
	// Renewed tells whether the latest command of process n that extended a lease is the one at
	// seq in node's order.
	Renewed(n, node int, seq int64) bool
	// NoVerdict reports whether the run can reach no verdict whatever comes.
	NoVerdict() bool
	// CommandOf is the Command of cmds sent to lock node node in call (0: none), as the words
	// say it.
	CommandOf(cmds []history.Cmd, node, call int) *Command
}

// Live is the referee's facts, for the arena's questions: the only way to them (a Referee has
// none of Live's methods itself).
func (r *Referee) Live() Live { return (*view)(&r.facts) }

// view is facts as the arena sees them: Live's methods, and nothing else.
type view facts

// facts is what a run's records state, kept as they come: the header, the processes, the orders'
// reads and writes, the calls under way, the keys of each lock node and the holds Lock calls made
// of them, the shelf. The checkers read it; it reads nothing of theirs (Live).
type facts struct {
	h      history.History // the header, and the records so far
	window time.Duration   // a key that expires within it is released now

	procs  map[int]*rproc
	orders map[int]*rorder
	ranked []*rorder // by when they began
	calls  map[int]*rcall

	nodes   []map[string]*rkey
	holds   []*hold
	granted int // Lock calls of buyers that returned true

	confirmed int
	shelf     int
	shelfSeq  int64
	// lastRenewal is each process's latest command that extended a lease (Renewed).
	lastRenewal map[int]nodeSeq
	// freeAt is when the last active hold ended; -1 while one is active (or before any).
	freeAt     time.Duration
	failedOver bool
	nowhere    string
	timedOut   string
}

func newFacts(h history.History) facts {
	f := facts{h: h, procs: map[int]*rproc{}, orders: map[int]*rorder{}, calls: map[int]*rcall{}, shelf: h.Stock,
		freeAt: -1, lastRenewal: map[int]nodeSeq{}}
	f.window = max(4*h.Timing.RTT, 5*time.Millisecond)
	for range max(len(h.Nodes), 1) {
		f.nodes = append(f.nodes, map[string]*rkey{})
	}
	return f
}

func (f *facts) proc(n int) *rproc {
	p := f.procs[n]
	if p == nil {
		p = &rproc{ended: -1}
		f.procs[n] = p
	}
	return p
}

func (f *facts) node(i int) map[string]*rkey {
	for len(f.nodes) <= i {
		f.nodes = append(f.nodes, map[string]*rkey{})
	}
	return f.nodes[i]
}

func (f *facts) nodeName(i int) string {
	if i < len(f.h.Nodes) {
		return f.h.Nodes[i]
	}
	return fmt.Sprintf("lock node %d", i+1)
}

// activeHold is the first hold still active, or nil.
func (f *facts) activeHold() *hold {
	for _, h := range f.holds {
		if !h.ended {
			return h
		}
	}
	return nil
}

// holdOf is process n's active hold, nil if it has none.
func (f *facts) holdOf(n int) *hold {
	for _, h := range f.holds {
		if !h.ended && h.buyer == n {
			return h
		}
	}
	return nil
}

// renews reports whether what rec did to key kc, as prev was before it, extended the key's lease
// and left its value (PEXPIRE, a renewing script, SET XX of the same value), and notes it as its
// process's latest renewal (Renewed).
func (f *facts) renews(rec history.Record, kc history.KeyChange, prev *rkey) bool {
	if prev == nil || kc.Gone() || kc.Before != kc.After || prev.value != kc.After || prev.deadline < 0 || rec.Buyer <= 0 {
		return false
	}
	if kc.TTL >= 0 && rec.At+kc.TTL <= prev.deadline {
		return false
	}
	f.lastRenewal[rec.Buyer] = nodeSeq{rec.Node, rec.Seq}
	return true
}

// — what the arena asks while a run goes on (Live) —

func (f *view) Inside() int {
	var first *rorder
	for _, o := range f.ranked {
		if o.inside && (first == nil || o.reads[len(o.reads)-1].seq < first.reads[len(first.reads)-1].seq) {
			first = o
		}
	}
	if first != nil {
		return first.buyer
	}
	if h := (*facts)(f).activeHold(); h != nil {
		return h.buyer
	}
	return 0
}

func (f *view) Releasing(n int) bool {
	for _, c := range f.calls {
		if c.buyer == n && !c.lock {
			return true
		}
	}
	return false
}

func (f *view) Shelf() int { return f.shelf }

// SoldOut: the stock as last written is gone, or as many orders were confirmed as there were
// units. Hazard: the shelf alone never empties under a handler that writes a stale count (read
// before its Lock): sales go on past the stock, and a scenario that orders until the shelf is
// empty runs to its deadline, with no verdict.
func (f *view) SoldOut() bool { return f.shelf <= 0 || f.confirmed >= f.h.Stock }

// HoldKeys: what buyer's Lock wrote and still holds, on each node.
func (f *view) HoldKeys(buyer int) map[int][]string {
	out := map[int][]string{}
	for _, h := range f.holds {
		if h.ended || h.buyer != buyer {
			continue
		}
		for nk := range h.keys {
			out[nk.node] = append(out[nk.node], nk.key)
		}
	}
	for _, ks := range out {
		slices.Sort(ks)
	}
	return out
}

func (f *view) Renewed(n, node int, seq int64) bool {
	x, ok := f.lastRenewal[n]
	return ok && x == nodeSeq{node, seq}
}

// NoVerdict: it ran past its deadline, or its fault found nowhere to strike.
func (f *view) NoVerdict() bool { return f.timedOut != "" || f.nowhere != "" }

func (f *view) Values(node int) map[string]string {
	out := map[string]string{}
	if node < 0 || node >= len(f.nodes) {
		return out
	}
	for k, st := range f.nodes[node] {
		out[k] = st.value
	}
	return out
}

// HeldKey: ok is false when no hold has a key on node.
func (f *view) HeldKey(node int) (key string, owner int, ok bool) {
	for _, h := range f.holds {
		if h.ended {
			continue
		}
		for nk := range h.keys {
			if nk.node == node && (!ok || nk.key < key) {
				key, owner, ok = nk.key, h.buyer, true
			}
		}
	}
	return key, owner, ok
}

func (f *view) CommandOf(cmds []history.Cmd, node, call int) *Command {
	return commandOf(cmds, node, call, (*facts)(f))
}
