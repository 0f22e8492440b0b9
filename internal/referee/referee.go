package referee

import (
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Referee judges a run from its history alone: it knows nothing of the steps, nothing of the
// arena, and reads no Redis and no clock (TestRefereeIsPure). Fed records in the order they were
// observed (Add), it keeps the violations found so far, tells the live arena what each record
// means (Event) and answers its questions from the records' facts alone (Live); Judge feeds it a
// whole saved history. Each kind has its own small checker over the same records, in a file of
// its own (shop.go, holds.go, renewals.go, stuck.go; idle and starved beside the shop's and
// findings.go; the error replies in replies.go), and everything it says is in words.go:
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
	// facts is what the records state, which the arena asks while it plays (Live); every field
	// below is the judging's, and no question of the arena reads one.
	facts
	emit func(Event)

	listed map[nodeKey]map[string]int // a list's items, by the buyer whose command put each there

	// the shop
	spans    []*span
	pairs    map[[2]int]bool
	overlaps []Overlap
	final    *int
	lost     []Rejection
	commands int

	// the holds
	foreign []Foreign
	renewed []Renewal
	replies []ReplyError
	// noScript is, by process, call and node, the reply a NOSCRIPT of the latest command there
	// was counted in: taken back if the next is the script itself (EVAL).
	noScript map[[3]int]int

	// waiting
	first   time.Duration // the first moment the lock came free; -1 before
	last    time.Duration
	gaps    []gap
	probes  map[time.Duration]time.Duration
	starved []Starve

	reentry []Reentry
	blinds  []Blind
	notes   []string
	stuck   stuckState
	told    map[vocab.Kind]bool
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
	r := &Referee{facts: newFacts(h), emit: emit, listed: map[nodeKey]map[string]int{}, pairs: map[[2]int]bool{}, first: -1,
		probes: map[time.Duration]time.Duration{}, told: map[vocab.Kind]bool{}, noScript: map[[3]int]int{}}
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
		r.say(Event{At: rec.At, Kind: EvFault, Buyer: rec.Buyer, Fault: history.Fault(rec.What), Sentence: rec.Says, Cmd: commandOf(rec.Cmds, rec.Node, rec.Call, &r.facts)})
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
