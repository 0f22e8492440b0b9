package referee

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Referee judges a run from its history alone: it knows nothing of the steps, nothing of the
// arena, and reads no Redis and no clock (TestRefereeIsPure). Fed records in the order they were
// observed (Add), it keeps the violations found so far and tells the live arena what each record
// means (Event); Judge feeds it a whole saved history. Each kind has its own small checker over
// the same records, in a file of its own (shop.go, holds.go, renewals.go, stuck.go; idle and
// starved beside the shop's and findings.go; the error replies in replies.go), and everything it
// says is in words.go:
//
//   - overlap, oversold (the shop is the truth): an order's critical section runs from the stock
//     read its write was computed from (its last read before the write) to that write, in the
//     inventory's order of commands; two sections overlap when each began before the other
//     ended. oversold = writes the inventory accepted − units that left the shelf.
//   - foreign-release (holds): the lock of a hold is whatever its Lock call wrote, on any key of
//     any node, and still held when the call returned true (or, for a call that wrote nothing,
//     what was written for it during the call: a hand-over). A hold ends when any of its keys is
//     gone, or will expire within a round trip, or is overwritten by another process; by a
//     process that is not the holder, that is a foreign release. Redis's own expiry, a
//     failover's or a restart's loss ends a hold with nobody to blame. A Lock granted to the
//     process that holds the lock is a re-entry: no new hold, the hold entered once more.
//   - foreign-renewal (renewals): a command that keeps a key's value and moves its lease later,
//     on the lock another process's active hold created.
//   - stuck (the end-of-run probe, or, live, a finished or dead owner's hold with a key that
//     never expires), lost-sales (an order that sold nothing, wrote nothing, and was not excused
//     while units remained), reentry-failed (the nested Lock), flood (commands per confirmed
//     order).
//   - starved, idle (waiting runs from an order's start to its first stock read, wherever the
//     waiting happens, but not while the order is at its own work): starved = an order whose
//     first read came after the first reads of StarveLimit orders that began after it while it
//     was not at its work (in the inventory's order); idle = the time no
//     hold was active while an order waited across it (begun before the lock came free, still
//     waiting when it was taken again: one that gave up meanwhile was turned away, not kept
//     waiting), gaps longer than a woken waiter needs (the idle probe's measure) counted.
//
// Hazard: what it cannot observe it must say (a blind record), or a verdict would rest on partial
// evidence in silence.
type Referee struct {
	h      history.History // the header, and the records so far
	emit   func(Event)
	window time.Duration // a key that expires within it is released now

	procs  map[int]*rproc
	orders map[int]*rorder
	ranked []*rorder // by when they began
	calls  map[int]*rcall
	listed map[nodeKey]map[string]int // a list's items, by the buyer whose command put each there

	// the shop
	spans     []*span
	pairs     map[[2]int]bool
	overlaps  []Overlap
	confirmed int
	shelf     int
	shelfSeq  int64
	final     *int
	lost      []Rejection
	commands  int

	// the holds
	nodes   []map[string]*rkey
	holds   []*hold
	granted int // Lock calls of buyers that returned true
	foreign []Foreign
	renewed []Renewal
	replies []ReplyError
	// noScript is, by process, call and node, the reply a NOSCRIPT of the latest command there
	// was counted in: taken back if the next is the script itself (EVAL).
	noScript map[[3]int]int
	// lastRenewal is each process's latest command that extended a lease (Renewed).
	lastRenewal map[int]nodeSeq

	// waiting
	freeAt  time.Duration // when the last active hold ended; -1 while one is active (or before any)
	first   time.Duration // the first such moment; -1 before
	last    time.Duration
	gaps    []gap
	probes  map[time.Duration]time.Duration
	starved []Starve

	reentry    []Reentry
	blinds     []Blind
	notes      []string
	nowhere    string
	timedOut   string
	stuck      stuckState
	failedOver bool
	told       map[vocab.Kind]bool
	// liveStuckSaid is the live check's sentence for a stuck lock, once it found one.
	liveStuckSaid string
}

// rproc is what the referee knows of one process.
type rproc struct {
	dead    bool
	ended   time.Duration // when its last order ended; -1 while one is under way or before any
	current int           // orders under way
	orders  int
}

// rorder is one order, as its records tell it.
type rorder struct {
	id, buyer, k int
	rank         int
	began        time.Duration
	reads        []stockOp // every stock read, in the inventory's order
	// in is when it got in: its Lock call returned holding, or, with no Lock call granted yet,
	// it touched the stock (a lock-free sale); -1 while it waits. A Lock call begun before any
	// was granted sends it back to waiting: a read before Lock (a peek, a stale count) is no
	// entry. entry is the inventory's number of its first stock operation since in (0: none
	// yet): the order in which orders got in, as the inventory saw them.
	in        time.Duration
	entry     int64
	granted   bool          // a Lock call of it returned holding
	starved   bool          // its starvation is counted
	wrote     bool          // it attempted a write (accepted or refused)
	wroteAt   time.Duration // its latest write
	inside    bool          // it has read and not yet written, nor ended
	confirmed int
	ended     bool
	endedAt   time.Duration
	failed    bool         // its handler returned an error
	waited    bool         // a command of its Lock found the lock held by another
	working   bool         // its work began, and no Lock call or stock operation of it has followed yet
	unpassed  map[int]bool // orders that began while it worked: they asked while it did not wait
}

type stockOp struct {
	seq   int64
	at    time.Duration
	stock int
	token int64 // the fencing token it showed the inventory (0: none)
}

// span is one critical section: from the read a write was computed from to that write.
type span struct {
	o            *rorder
	read, write  stockOp
	refused, out bool
}

// rcall is one Lock or Unlock call.
type rcall struct {
	id, buyer, order int
	lock             bool
	began            time.Duration
	wrote            map[nodeKey]bool // keys its commands changed
	created          map[nodeKey]bool // keys its commands brought into being
	named            map[nodeKey]bool // keys its commands named
}

type nodeKey struct {
	node int
	key  string
}

// nodeSeq places a command in a lock node's order.
type nodeSeq struct {
	node int
	seq  int64
}

// rkey is one key of a lock node, as the referee last saw it.
type rkey struct {
	value     string
	deadline  time.Duration // when it expires; -1: never
	hold      *hold
	writer    int // the process that wrote its value
	call      int // in that call (0: outside any call)
	lockOrder int // the order whose Lock call wrote its value (0: none, or not a Lock call)
	writtenAt time.Duration
	// left is the hold whose call created this key and that ended on another node while the key
	// stayed here (a quorum's hold ends when its first key is gone): what it left, until it goes.
	left *hold
}

// hold is a lock a Lock call got: the keys it wrote (or was handed), each marked true when the
// call brought it into being (the lock proper: a key it created, or was handed) and false when it
// only changed a key that was there (a line of waiters, a token counter: its keeping). It ends when
// a key it created is gone or about to expire, or when another process's writes have left it
// none of the keys it created.
type hold struct {
	id, buyer, order int
	keys             map[nodeKey]bool
	rewrote          map[nodeKey]time.Duration // when its holder's Unlock last rewrote a key it created
	began            time.Duration
	ended            bool
	// depth is how many Lock calls of its process have it now: 1, and one more for each Lock
	// granted to its process while it held the lock (a re-entry), one less for each Unlock
	// after one.
	depth int
}

// created reports whether h still has a key its call created.
func (h *hold) created() bool {
	for _, c := range h.keys {
		if c {
			return true
		}
	}
	return false
}

// gap is a stretch the lock sat free while an order waited.
type gap struct{ from, length time.Duration }

// stuckState is what the end-of-run probe found.
type stuckState struct {
	probed bool
	stuck  bool
	owner  int
	detail string
}

// NewReferee starts a referee of a run whose history begins with h's header (h.Records is
// ignored; Add them). emit, if not nil, is told what each record means, as it is added.
func NewReferee(h history.History, emit func(Event)) *Referee {
	h.Records = nil
	r := &Referee{h: h, emit: emit, procs: map[int]*rproc{}, orders: map[int]*rorder{},
		calls: map[int]*rcall{}, listed: map[nodeKey]map[string]int{}, pairs: map[[2]int]bool{}, shelf: h.Stock, freeAt: -1, first: -1,
		probes: map[time.Duration]time.Duration{}, told: map[vocab.Kind]bool{}, lastRenewal: map[int]nodeSeq{}, noScript: map[[3]int]int{}}
	r.window = max(4*h.Timing.RTT, 5*time.Millisecond)
	for range max(len(h.Nodes), 1) {
		r.nodes = append(r.nodes, map[string]*rkey{})
	}
	return r
}

// Judge judges a whole history, for its scenario's kinds (every kind for a live session's).
func Judge(h *history.History) *Report {
	r := NewReferee(*h, nil)
	for _, rec := range h.Records {
		r.Add(rec)
	}
	return r.Report()
}

// History is the run so far: its header and every record added.
func (r *Referee) History() *history.History {
	h := r.h
	h.Records = slices.Clone(r.h.Records)
	return &h
}

func (r *Referee) say(e Event) {
	switch e.Kind {
	case EvAcquired, EvReleased, EvForeign, EvExpired, EvLost, EvFailover, EvRestart, EvWaiting, EvPublish, EvLine:
		if len(r.h.Nodes) > 1 {
			e.On = r.nodeName(e.Node)
		}
	}
	if r.emit != nil {
		r.emit(e)
	}
}

func (r *Referee) proc(n int) *rproc {
	p := r.procs[n]
	if p == nil {
		p = &rproc{ended: -1}
		r.procs[n] = p
	}
	return p
}

func (r *Referee) node(i int) map[string]*rkey {
	for len(r.nodes) <= i {
		r.nodes = append(r.nodes, map[string]*rkey{})
	}
	return r.nodes[i]
}

// announce tells the live arena of the first violation of each kind, in the referee's words, with
// the buyers it names (who, and the other one where there is one).
func (r *Referee) announce(at time.Duration, k vocab.Kind, sentence string, who ...int) {
	if r.told[k] {
		return
	}
	r.told[k] = true
	e := Event{At: at, Kind: EvViolation, Viol: k, Sentence: sentence}
	if !slices.Contains(r.h.Kinds(), k) {
		e.NotJudgedBy = string(r.h.Scenario)
	}
	if len(who) > 0 {
		e.Buyer = who[0]
	}
	if len(who) > 1 {
		e.Other = who[1]
	}
	r.say(e)
}

// Add takes the next record of the run.
func (r *Referee) Add(rec history.Record) {
	r.h.Records = append(r.h.Records, rec)
	switch rec.Kind {
	case history.RecOrder:
		switch rec.What {
		case history.OrderBegin:
			r.orderBegan(rec)
		case history.OrderWork:
			if o := r.orders[rec.Order]; o != nil {
				o.working = true
				r.say(Event{At: rec.At, Kind: EvWork, Buyer: o.buyer, Order: o.k})
			}
		default:
			r.orderEnded(rec)
		}
	case history.RecCall:
		r.call(rec)
	case history.RecCmd:
		r.command(rec)
	case history.RecLapse:
		r.lapse(rec)
	case history.RecUnseen:
		for _, kc := range rec.Keys {
			r.setKey(rec.Node, kc, rec.At, 0, 0)
		}
		r.blind(unseenSays(r.nodeName(rec.Node)), vocab.ForeignRelease)
	case history.RecStock:
		r.stockOp(rec)
	case history.RecFault:
		r.say(Event{At: rec.At, Kind: EvFault, Buyer: rec.Buyer, Fault: history.Fault(rec.What), Sentence: rec.Says, Cmd: commandOf(rec.Cmds, rec.Node, rec.Call, r)})
	case history.RecProcess:
		r.process(rec)
	case history.RecNode:
		r.nodeChange(rec)
	case history.RecNested:
		r.say(Event{At: rec.At, Kind: EvReentry, Buyer: rec.Buyer, OK: rec.OK, Err: rec.Err})
		if !rec.OK {
			e := Reentry{Buyer: rec.Buyer, Why: rec.Err, At: rec.At}
			r.reentry = append(r.reentry, e)
			r.announce(rec.At, vocab.ReentryFailed, e.String(), e.Buyer)
		}
	case history.RecProbe:
		if rec.What == history.ProbeIdle {
			r.probes[rec.Due] = rec.D
			return
		}
		r.stuckProbe(rec)
	case history.RecClock:
		r.liveStuck(rec.At)
	case history.RecFinal:
		n := rec.Stock
		r.final = &n
	case history.RecBlind:
		r.blind(rec.What, rec.Kinds...)
	case history.RecNowhere:
		r.nowhere = rec.What
	case history.RecNote:
		r.notes = append(r.notes, rec.What)
	case history.RecTimeout:
		r.timedOut = rec.What
	}
}

// blind records something the referee could not observe, once per sentence.
func (r *Referee) blind(what string, kinds ...vocab.Kind) {
	for _, b := range r.blinds {
		if b.What == what {
			return
		}
	}
	r.blinds = append(r.blinds, Blind{Kinds: kinds, What: what})
}

func (r *Referee) nodeName(i int) string {
	if i < len(r.h.Nodes) {
		return r.h.Nodes[i]
	}
	return fmt.Sprintf("lock node %d", i+1)
}

// — what the lab asks while a run goes on —

// Inside is the buyer whose order is inside its critical section (the first in, if several
// are), or else the buyer of the first active hold; 0 if none.
func (r *Referee) Inside() int {
	var first *rorder
	for _, o := range r.ranked {
		if o.inside && (first == nil || o.reads[len(o.reads)-1].seq < first.reads[len(first.reads)-1].seq) {
			first = o
		}
	}
	if first != nil {
		return first.buyer
	}
	if h := r.activeHold(); h != nil {
		return h.buyer
	}
	return 0
}

// Releasing tells whether buyer n has an Unlock call under way (begun, not returned).
func (r *Referee) Releasing(n int) bool {
	for _, c := range r.calls {
		if c.buyer == n && !c.lock {
			return true
		}
	}
	return false
}

// Shelf is the stock as last written.
func (r *Referee) Shelf() int { return r.shelf }

// SoldOut reports whether the shop is done selling: the stock as last written is gone, or as
// many orders were confirmed as there were units. Hazard: the shelf alone never empties under a
// handler that writes a stale count (read before its Lock): sales go on past the stock, and a
// scenario that orders until the shelf is empty runs to its deadline, with no verdict.
func (r *Referee) SoldOut() bool { return r.shelf <= 0 || r.confirmed >= r.h.Stock }

// HoldKeys is the keys (on node node) of buyer's active hold: what its Lock wrote and still holds.
func (r *Referee) HoldKeys(buyer int) map[int][]string {
	out := map[int][]string{}
	for _, h := range r.holds {
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

// Owner is the buyer whose active hold has key on node, or 0.
func (r *Referee) Owner(node int, key string) int {
	if st := r.node(node)[key]; st != nil && st.hold != nil && !st.hold.ended {
		return st.hold.buyer
	}
	return 0
}

// Renewed tells whether the latest command of process n that extended a lease is the one at seq
// in node's order.
func (r *Referee) Renewed(n, node int, seq int64) bool {
	x, ok := r.lastRenewal[n]
	return ok && x == nodeSeq{node, seq}
}

// FailedOver reports whether a lock node has failed over.
func (r *Referee) FailedOver() bool { return r.failedOver }

// NoVerdict reports whether the run can reach no verdict on its kinds whatever comes: it ran past
// its deadline, or its fault found nowhere to strike.
func (r *Referee) NoVerdict() bool { return r.timedOut != "" || r.nowhere != "" }

// Values is every key of lock node node as the referee last saw it: its value print.
func (r *Referee) Values(node int) map[string]string {
	out := map[string]string{}
	for k, st := range r.node(node) {
		out[k] = st.value
	}
	return out
}

// HeldKey is the first key (by name) of an active hold on node, and its holder; ok is false when
// no hold has a key there.
func (r *Referee) HeldKey(node int) (key string, owner int, ok bool) {
	for _, h := range r.holds {
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
