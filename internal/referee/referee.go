package referee

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Referee judges a run from its history alone: it knows nothing of the steps, nothing of the
// arena, and reads no Redis. Fed records in the order they were observed (Add), it keeps the
// violations found so far and tells the live arena what each record means (Event); Judge feeds it
// a whole saved history. Each kind has its own small checker over the same records:
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
//     failover's or a restart's loss ends a hold with nobody to blame.
//   - stuck (the end-of-run probe, or, live, a finished or dead owner's hold with a key that
//     never expires), lost-sales (an order that sold nothing, wrote nothing, and was not excused
//     while units remained), reentry-failed (the nested Lock), flood (commands per confirmed
//     order).
//   - starved, idle (waiting runs from an order's start to its first stock read, wherever the
//     waiting happens): starved = an order whose first read came after the first reads of
//     StarveLimit orders that began after it (in the inventory's order); idle = the time no hold was active while an order waited, gaps longer than a woken
//     waiter needs (the idle probe's measure) counted.
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
	foreign []Foreign

	// waiting
	freeAt     time.Duration // when the last active hold ended; -1 while one is active (or before any)
	freeWaited bool          // an order was waiting when it ended
	first      time.Duration // the first such moment; -1 before
	last       time.Duration
	gaps       []gap
	probes     map[time.Duration]time.Duration
	starved    []Starve

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
	firstRead    time.Duration
	firstSeq     int64 // the inventory's number of its first read
	wrote        bool  // it attempted a write (accepted or refused)
	inside       bool  // it has read and not yet written, nor ended
	confirmed    int
	ended        bool
	endedAt      time.Duration
	waited       bool // a command of its Lock found the lock held by another
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
	began            time.Duration
	ended            bool
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
		probes: map[time.Duration]time.Duration{}, told: map[vocab.Kind]bool{}}
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
		r.blind(fmt.Sprintf("keys of %s changed between two commands, by something no process sent (a client outside the buyers' processes?)", r.nodeName(rec.Node)), vocab.ForeignRelease)
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

// — orders —

func (r *Referee) orderBegan(rec history.Record) {
	o := &rorder{id: rec.Order, buyer: rec.Buyer, k: rec.K, rank: len(r.ranked), began: rec.At, firstRead: -1}
	r.orders[o.id] = o
	r.ranked = append(r.ranked, o)
	p := r.proc(rec.Buyer)
	p.current++
	p.orders++
	p.ended = -1
	r.say(Event{At: rec.At, Kind: EvStart, Buyer: rec.Buyer, Order: rec.K})
}

func (r *Referee) orderEnded(rec history.Record) {
	o := r.orders[rec.Order]
	if o == nil || o.ended {
		return
	}
	o.ended, o.endedAt = true, rec.At
	p := r.proc(o.buyer)
	p.current--
	if p.current <= 0 {
		p.current, p.ended = 0, rec.At
	}
	if o.inside {
		o.inside = false
		r.say(Event{At: rec.At, Kind: EvExit, Buyer: o.buyer, Order: o.k})
	}
	if o.firstRead < 0 {
		r.passedBy(o, rec.At)
	}
	// Units remained as far as the order could tell: what its last read saw, or, without one,
	// the shelf as last written.
	shelf := r.shelf
	if len(o.reads) > 0 {
		shelf = o.reads[len(o.reads)-1].stock
	}
	if o.confirmed == 0 && !o.wrote && rec.Excuse == "" && shelf > 0 {
		j := Rejection{Buyer: o.buyer, Order: o.id, Stock: shelf, At: rec.At}
		r.lost = append(r.lost, j)
		r.say(Event{At: rec.At, Kind: EvRejected, Buyer: o.buyer, Order: o.k, Stock: shelf})
		r.announce(rec.At, vocab.LostSales, j.String(), j.Buyer)
	}
	r.say(Event{At: rec.At, Kind: EvDone, Buyer: o.buyer, Order: o.k, Sold: o.confirmed > 0, Err: rec.Err})
}

// waiting reports whether o was waiting at the moment: begun, no read yet, not ended.
func (o *rorder) waiting() bool { return !o.ended && o.firstRead < 0 }

// — the shop —

func (r *Referee) stockOp(rec history.Record) {
	o := r.orders[rec.Order]
	if o == nil {
		return // the end-of-run probe's shop sells nothing and records nothing
	}
	op := stockOp{seq: rec.Seq, at: rec.At, stock: rec.Stock, token: rec.Token}
	if rec.Buyer > 0 {
		r.commands++ // each shop operation is one command
	}
	r.say(Event{At: rec.At, Kind: EvCommand, Buyer: rec.Buyer, Cmd: stockCommand(rec.What)})
	switch rec.What {
	case history.StockRead:
		r.read(o, op)
	case history.StockSell:
		r.read(o, stockOp{seq: rec.Seq, at: rec.At, stock: rec.Stock + 1})
		r.write(o, op, false)
	case history.StockSoldOut:
		r.read(o, op)
	case history.StockWrite:
		r.write(o, op, false)
	case history.StockWriteRefused:
		r.say(Event{At: rec.At, Kind: EvFenced, Buyer: o.buyer, Order: o.k, Token: rec.Token, Write: true})
		r.write(o, op, true)
	case history.StockReadRefused:
		r.say(Event{At: rec.At, Kind: EvFenced, Buyer: o.buyer, Order: o.k, Token: rec.Token})
	}
}

func (r *Referee) read(o *rorder, op stockOp) {
	first := o.firstRead < 0
	o.reads = append(o.reads, op)
	if first {
		o.firstRead, o.firstSeq = op.at, op.seq
		r.passedBy(o, op.at)
	}
	o.inside = true
	r.say(Event{At: op.at, Kind: EvEnter, Buyer: o.buyer, Order: o.k, Stock: op.stock, Token: op.token})
}

// passedBy counts, once o's wait is over (its first read, or its end without one), the orders
// that began after it and read first, in the inventory's order: more than StarveLimit, and it
// starved. A process's own orders do not pass it.
func (r *Referee) passedBy(o *rorder, at time.Duration) {
	n := r.passes(o)
	if n < vocab.StarveLimit {
		return
	}
	s := Starve{Buyer: o.buyer, Passed: n, At: at}
	r.starved = append(r.starved, s)
	r.announce(at, vocab.Starved, s.String(), s.Buyer)
}

// passes counts the orders that began after o and read first, in the inventory's order.
func (r *Referee) passes(o *rorder) int {
	n := 0
	for _, x := range r.ranked[o.rank+1:] {
		if x.buyer != o.buyer && x.firstRead >= 0 && (o.firstRead < 0 || x.firstSeq < o.firstSeq) {
			n++
		}
	}
	return n
}

// write ends o's critical section at op: from its last read before op (none: a write computed
// from nothing the shop said, which sells nothing it knows of).
func (r *Referee) write(o *rorder, op stockOp, refused bool) {
	o.wrote = true
	var from *stockOp
	for i := len(o.reads) - 1; i >= 0; i-- {
		if o.reads[i].seq <= op.seq {
			from = &o.reads[i]
			break
		}
	}
	if !refused {
		o.confirmed++
		r.confirmed++
		if op.seq > r.shelfSeq {
			r.shelf, r.shelfSeq = op.stock, op.seq
		}
		r.say(Event{At: op.at, Kind: EvWrite, Buyer: o.buyer, Order: o.k, Stock: op.stock, Token: op.token})
		if over := r.confirmed - (r.h.Stock - r.shelf); over > 0 {
			r.announce(op.at, vocab.Oversold, oversoldSoFar(op.at, r.confirmed, r.h.Stock-r.shelf), o.buyer)
		}
	}
	if o.inside {
		o.inside = false
		r.say(Event{At: op.at, Kind: EvExit, Buyer: o.buyer, Order: o.k})
	}
	if from == nil {
		return
	}
	s := &span{o: o, read: *from, write: op, refused: refused}
	for _, x := range r.spans {
		r.decide(x, s)
	}
	r.spans = append(r.spans, s)
}

// decide records x and y as overlapping if each began before the other ended, in the
// inventory's order.
func (r *Referee) decide(x, y *span) {
	if !(x.read.seq < y.write.seq && y.read.seq < x.write.seq) {
		return
	}
	if y.read.seq < x.read.seq {
		x, y = y, x
	}
	key := [2]int{x.o.id, y.o.id}
	if r.pairs[key] {
		return
	}
	r.pairs[key] = true
	to := min(x.write.at, y.write.at)
	ov := Overlap{A: x.o.buyer, B: y.o.buyer, From: y.read.at, To: max(to, y.read.at)}
	r.overlaps = append(r.overlaps, ov)
	at := max(x.write.at, y.write.at)
	r.say(Event{At: at, Kind: EvOverlap, Buyer: ov.B, Other: ov.A, From: ov.From, To: ov.To, Sentence: ov.String()})
	r.announce(at, vocab.Overlap, ov.String(), ov.B, ov.A)
}

// — calls and holds —

func (r *Referee) call(rec history.Record) {
	lock := rec.What == history.CallLock
	if !rec.End {
		r.calls[rec.Call] = &rcall{id: rec.Call, buyer: rec.Buyer, order: rec.Order, lock: lock, began: rec.At,
			wrote: map[nodeKey]bool{}, created: map[nodeKey]bool{}, named: map[nodeKey]bool{}}
		return
	}
	c := r.calls[rec.Call]
	if c == nil {
		return
	}
	delete(r.calls, rec.Call)
	if !lock || rec.Buyer == 0 {
		return
	}
	o := r.orders[c.order]
	k := 0
	if o != nil {
		k = o.k
	}
	if !rec.OK || rec.Err != "" {
		r.say(Event{At: rec.At, Kind: EvRefused, Buyer: c.buyer, Order: k})
		return
	}
	// The hold: what this call wrote and still holds; or, holding nothing of its own, what was
	// written for it during the call by another process, among the keys it named (a hand-over).
	keys := map[nodeKey]bool{}
	began := time.Duration(-1)
	mark := func(nk nodeKey, st *rkey, created bool) {
		keys[nk] = created
		if began < 0 || st.writtenAt < began {
			began = st.writtenAt
		}
	}
	for nk := range c.wrote {
		if st := r.node(nk.node)[nk.key]; st != nil && st.call == c.id {
			mark(nk, st, c.created[nk])
		}
	}
	handed := false
	if len(keys) == 0 && len(r.HoldKeys(c.buyer)) == 0 {
		for nk := range c.named {
			if st := r.node(nk.node)[nk.key]; st != nil && st.writer != c.buyer && st.writer != 0 && st.writtenAt >= c.began {
				mark(nk, st, true)
				handed = true
			}
		}
	}
	if len(keys) == 0 {
		return // a nested acquire (the count lives in the process), or a Lock that says yes to nothing
	}
	h := &hold{id: len(r.holds) + 1, buyer: c.buyer, order: c.order, keys: map[nodeKey]bool{}, began: began}
	if !func() bool {
		for _, created := range keys {
			if created {
				return true
			}
		}
		return false
	}() {
		for nk := range keys {
			keys[nk] = true // it created nothing: what it holds is the lock (a takeover, say)
		}
	}
	r.holds = append(r.holds, h)
	nodes := map[int]time.Duration{} // node → the lease of the lock there (-1: none)
	for nk, created := range keys {
		st := r.node(nk.node)[nk.key]
		if prev := st.hold; prev != nil && prev != h {
			r.leave(prev, nk, rec.At, st.writer, false)
		}
		st.hold = h
		h.keys[nk] = created
		ttl := time.Duration(-1)
		if st.deadline >= 0 {
			ttl = st.deadline - rec.At
		}
		if old, ok := nodes[nk.node]; !ok || (old >= 0 && (ttl < 0 || ttl > old)) {
			nodes[nk.node] = ttl
		}
	}
	for i := range r.nodes {
		if ttl, ok := nodes[i]; ok {
			r.say(Event{At: rec.At, Kind: EvAcquired, Buyer: c.buyer, Order: k, Node: i, Handed: handed, TTL: ttl})
		}
	}
	if r.freeAt >= 0 {
		if r.freeWaited {
			r.gaps = append(r.gaps, gap{from: r.freeAt, length: max(began-r.freeAt, 0)})
		}
		r.freeAt = -1
	}
}

// leave takes key nk out of h, at at: gone (deleted, or about to expire), or taken by another
// process's write. by is the process whose command did it (0: Redis, a failover, the lab). A hold
// whose created key is gone ends: released by its holder, a foreign release by anyone else, with
// nobody to blame when by is 0. A hold that another's writes left with no created key ends too,
// with no blame (taken over), or released when its holder wrote it over (a hand-over).
func (r *Referee) leave(h *hold, nk nodeKey, at time.Duration, by int, gone bool) {
	created := h.keys[nk]
	delete(h.keys, nk)
	if st := r.node(nk.node)[nk.key]; st != nil && st.hold == h {
		st.hold = nil
	}
	if h.ended || !(gone && created) && h.created() {
		return
	}
	h.ended = true
	r.detach(h, nk)
	switch {
	case by == h.buyer:
		r.say(Event{At: at, Kind: EvReleased, Buyer: by, Node: nk.node})
	case by != 0 && gone:
		f := Foreign{By: by, Owner: h.buyer, Node: nk.node, At: at}
		r.foreign = append(r.foreign, f)
		r.say(Event{At: at, Kind: EvForeign, Buyer: by, Other: h.buyer, Node: nk.node})
		r.announce(at, vocab.ForeignRelease, f.String(), f.By, f.Owner)
	}
	r.freed(at, at)
}

// freed notes that a hold ended at due (seen at at): if no other is active, the lock is free from
// due.
func (r *Referee) freed(at, due time.Duration) {
	for _, h := range r.holds {
		if !h.ended {
			return
		}
	}
	if r.freeAt >= 0 {
		return
	}
	r.freeAt = due
	r.freeWaited = false
	for _, o := range r.ranked {
		if o.waiting() {
			r.freeWaited = true
			break
		}
	}
	if r.first < 0 {
		r.first = due
	}
	r.last = due
	r.say(Event{At: at, Kind: EvFree, Due: due})
}

// setKey applies one change of a key by process by (0: Redis or the lab) in call, at at.
func (r *Referee) setKey(node int, kc history.KeyChange, at time.Duration, by, call int) *rkey {
	keys := r.node(node)
	if kc.Gone() {
		delete(keys, kc.Key)
		return nil
	}
	st := keys[kc.Key]
	if st == nil {
		st = &rkey{}
		keys[kc.Key] = st
	}
	st.value = kc.After
	st.deadline = -1
	if kc.TTL >= 0 {
		st.deadline = at + kc.TTL
	}
	if kc.Before != kc.After || by != 0 {
		st.writer, st.call, st.writtenAt = by, call, at
	}
	return st
}

// command applies what one command, pipeline or transaction of a process did to a lock node.
func (r *Referee) command(rec history.Record) {
	if rec.Buyer > 0 {
		r.commands += len(rec.Cmds)
		if r.commands > vocab.FloodLimit*(r.confirmed+1) {
			r.announce(rec.At, vocab.Flood, floodSentence(r.commands, r.confirmed))
		}
	}
	if rec.Buyer > 0 {
		r.say(Event{At: rec.At, Kind: EvCommand, Buyer: rec.Buyer, Node: rec.Node, Cmd: commandOf(rec.Cmds, rec.Node, rec.Call, r)})
	}
	r.lines(rec)
	defer func() { // said after what the command did to the keys: a release, then its wake-up
		for _, m := range rec.Published {
			r.say(Event{At: rec.At, Kind: EvPublish, Buyer: rec.Buyer, Node: rec.Node, Channel: m.Channel, Sentence: m.Text})
		}
	}()
	blame := true
	if rec.Ambiguous {
		if rec.DeletesOnly {
			blame = !rec.ReplyZero // DEL answered how many it deleted
		} else {
			blame = false
			r.blind(fmt.Sprintf("buyer %d's %s ran as a key of %s ran out; the referee could not tell which of them removed it", rec.Buyer, commandOf(rec.Cmds, rec.Node, rec.Call, r).Label, r.nodeName(rec.Node)), vocab.ForeignRelease)
		}
	}
	c := r.calls[rec.Call]
	changed := map[string]bool{}
	for _, kc := range rec.Keys {
		changed[kc.Key] = true
		nk := nodeKey{rec.Node, kc.Key}
		prev := r.node(rec.Node)[kc.Key]
		var h *hold
		if prev != nil {
			h = prev.hold
		}
		soon := !kc.Gone() && kc.TTL >= 0 && kc.TTL <= r.window
		by := rec.Buyer
		if !blame {
			by = 0
		}
		if prev != nil && prev.left != nil {
			if kc.Gone() || soon {
				r.leftGone(prev.left, rec.Node, rec.At, by, 0)
			}
			if kc.Gone() || soon || (kc.Before != kc.After && rec.Buyer != prev.left.buyer) {
				prev.left = nil // gone, or another's now
			}
		}
		switch {
		case h != nil && (kc.Gone() || soon):
			if !blame {
				r.say(Event{At: rec.At, Kind: EvExpired, Other: h.buyer, Node: rec.Node})
			}
			if rec.Buyer > 0 || !blame {
				r.leave(h, nk, rec.At, by, true)
			}
		case h != nil && kc.Before != kc.After && h.buyer != rec.Buyer && rec.Buyer > 0:
			prev.hold = nil
			r.leave(h, nk, rec.At, rec.Buyer, false)
		}
		st := r.setKey(rec.Node, kc, rec.At, rec.Buyer, rec.Call)
		if st != nil && kc.Before != kc.After {
			st.lockOrder = 0
			if c != nil && c.lock {
				st.lockOrder = c.order
			}
		}
		if st != nil && h != nil && !h.ended && h.keys[nk] {
			st.hold = h
		}
		if c != nil && c.lock && st != nil {
			c.wrote[nk] = true
			if kc.Before == "" {
				c.created[nk] = true
			}
		}
	}
	if c != nil {
		for _, cmd := range rec.Cmds {
			for _, a := range cmd.Args {
				if _, ok := r.node(rec.Node)[a]; ok {
					c.named[nodeKey{rec.Node, a}] = true
				}
			}
		}
	}
	// A command of a Lock call that named a key another process holds, and left it as it was:
	// the order found the lock taken. A key an active hold has says whose lock it is; a key no
	// hold has (a lost reply's orphan) says so by its writer, but only of a command that changed
	// nothing itself: one that wrote its own lock (a retry that takes it back) found nothing taken
	// in a line of waiters another buyer wrote.
	if c != nil && c.lock && rec.Buyer > 0 {
		o := r.orders[c.order]
		if o != nil && !o.waited {
			if owner := r.takenBy(rec, c, changed); owner != 0 {
				o.waited = true
				r.say(Event{At: rec.At, Kind: EvWaiting, Buyer: rec.Buyer, Order: o.k, Other: owner, Node: rec.Node})
			}
		}
	}
}

// takenBy is the buyer whose lock command rec of call c found taken (0: none): a key it named and
// left as it was, held by another's active hold, or, where it changed nothing, written by another.
func (r *Referee) takenBy(rec history.Record, c *rcall, changed map[string]bool) int {
	weak := 0
	for _, cmd := range rec.Cmds {
		for _, a := range cmd.Args {
			st := r.node(rec.Node)[a]
			if st == nil || changed[a] {
				continue
			}
			if h := st.hold; h != nil {
				if h.buyer != rec.Buyer || h.order != c.order {
					return h.buyer
				}
				continue
			}
			if weak == 0 && st.writer != 0 && st.writer != rec.Buyer {
				weak = st.writer
			}
		}
	}
	if len(changed) > 0 {
		return 0
	}
	return weak
}

// lapse applies keys that ran out (or lost an expired field) on their own.
func (r *Referee) lapse(rec history.Record) {
	for _, kc := range rec.Keys {
		st := r.node(rec.Node)[kc.Key]
		if st != nil && st.hold != nil && kc.Gone() {
			owner := st.hold.buyer
			r.say(Event{At: rec.At, Kind: EvExpired, Other: owner, Node: rec.Node, Due: rec.Due})
			r.lapsed(st.hold, nodeKey{rec.Node, kc.Key}, rec.At, rec.Due)
		} else if st != nil && st.left != nil && kc.Gone() {
			r.leftGone(st.left, rec.Node, rec.At, 0, rec.Due)
		} else if kc.Gone() {
			r.say(Event{At: rec.At, Kind: EvExpired, Node: rec.Node, Due: rec.Due})
		}
		if !kc.Gone() || st != nil {
			r.setKey(rec.Node, kc, rec.Due, 0, 0)
		}
	}
}

// lapsed takes key nk out of h, seen gone at at, run out at due.
func (r *Referee) lapsed(h *hold, nk nodeKey, at, due time.Duration) {
	created := h.keys[nk]
	delete(h.keys, nk)
	if st := r.node(nk.node)[nk.key]; st != nil && st.hold == h {
		st.hold = nil
	}
	if h.ended || !created && h.created() {
		return
	}
	h.ended = true
	r.detach(h, nk)
	r.freed(at, due)
}

// detach lets go of the keys h still had when it ended at key end. A key its call created on
// another node stays there until it goes: it is kept as what h left (rkey.left), so that its
// going is said too (an event with Left), though it ends no hold and blames nobody.
func (r *Referee) detach(h *hold, end nodeKey) {
	for k, created := range h.keys {
		if st := r.node(k.node)[k.key]; st != nil && st.hold == h {
			st.hold = nil
			if created && k.node != end.node {
				st.left = h
			}
		}
	}
}

// leftGone says that what hold h left on node is gone, at at: deleted by by (its holder or
// another process), or, by 0, run out at due.
func (r *Referee) leftGone(h *hold, node int, at time.Duration, by int, due time.Duration) {
	switch {
	case by == h.buyer:
		r.say(Event{At: at, Kind: EvReleased, Buyer: by, Node: node, Left: true})
	case by != 0:
		r.say(Event{At: at, Kind: EvForeign, Buyer: by, Other: h.buyer, Node: node, Left: true})
	default:
		r.say(Event{At: at, Kind: EvExpired, Other: h.buyer, Node: node, Due: due, Left: true})
	}
}

// nodeChange applies a failover or a restart: the node lost Keys.
func (r *Referee) nodeChange(rec history.Record) {
	kind := EvFailover
	if rec.What == history.NodeRestart {
		kind = EvRestart
	}
	r.say(Event{At: rec.At, Kind: kind, Node: rec.Node, OK: rec.OK, Err: rec.Err, D: rec.D})
	if !rec.OK {
		return
	}
	if rec.What == history.NodeFailover {
		r.failedOver = true
	}
	for _, kc := range rec.Keys {
		st := r.node(rec.Node)[kc.Key]
		// A key the node lost, or has with another value — an older one, from writes the
		// replica had before its link was held back — is no longer what its hold wrote.
		lost := kc.Gone() || kc.After != kc.Before
		if st != nil && st.hold != nil && lost {
			r.say(Event{At: rec.At, Kind: EvLost, Other: st.hold.buyer, Node: rec.Node})
			r.leave(st.hold, nodeKey{rec.Node, kc.Key}, rec.At, 0, true)
		} else if st != nil && st.left != nil && lost {
			r.say(Event{At: rec.At, Kind: EvLost, Other: st.left.buyer, Node: rec.Node, Left: true})
		}
		r.setKey(rec.Node, kc, rec.At, 0, 0)
	}
}

func (r *Referee) process(rec history.Record) {
	var kind EventKind
	switch rec.What {
	case history.ProcessCrashed:
		kind = EvCrashed
		p := r.proc(rec.Buyer)
		p.dead = true
		if p.ended < 0 {
			p.ended = rec.At
		}
	case history.ProcessFrozen:
		kind = EvFrozen
	case history.ProcessThawed:
		kind = EvThawed
	case history.ProcessPartitioned:
		kind = EvPartitioned
	case history.ProcessHealed:
		kind = EvHealed
	default:
		return
	}
	r.say(Event{At: rec.At, Kind: kind, Buyer: rec.Buyer, D: rec.D, Sentence: rec.Says})
}

// — stuck —

// activeHold is the first hold still active, or nil.
func (r *Referee) activeHold() *hold {
	for _, h := range r.holds {
		if !h.ended {
			return h
		}
	}
	return nil
}

func (r *Referee) stuckProbe(rec history.Record) {
	if rec.OK {
		r.stuck = stuckState{probed: true}
		return
	}
	if rec.Err != "" { // the probe could not run to the end
		r.stuck = stuckState{detail: rec.Err}
		return
	}
	owner, who := 0, "a lock nobody is using any more"
	if h := r.activeHold(); h != nil {
		owner = h.buyer
		who = fmt.Sprintf("the lock of buyer %d, whose order has ended,", owner)
	}
	r.stuck = stuckState{probed: true, stuck: true, owner: owner, detail: fmt.Sprintf(
		"a new buyer could not get in for %s: %s keeps out everyone while %s on the shelf", ms(rec.D), who, units(r.shelf))}
}

// liveStuck judges stuck as a live session runs: a hold whose order has ended (or whose process
// died), with a key that never expires, while units remain, once another buyer's order that began
// a TTL after it was turned away — or, with nobody turned away, once its owner has had no order
// under way for a TTL. A key with a lease frees itself: it is not stuck, however long the lab shows it
// held.
func (r *Referee) liveStuck(now time.Duration) {
	if r.shelf <= 0 {
		return
	}
	for _, h := range r.holds {
		if h.ended {
			continue
		}
		p := r.proc(h.buyer)
		o := r.orders[h.order]
		var done time.Duration
		switch {
		case p.dead:
			done = p.ended
		case o != nil && o.ended:
			done = o.endedAt
		default:
			continue
		}
		forever := false
		for nk := range h.keys {
			if st := r.node(nk.node)[nk.key]; st != nil && st.deadline < 0 {
				forever = true
			}
		}
		if !forever {
			continue
		}
		turned := r.turnedAway(h.buyer, done)
		idle := p.current == 0 && p.ended >= 0 && now-p.ended >= r.h.Timing.TTL
		if !turned && !idle {
			continue
		}
		how := "whose order has ended"
		if p.dead {
			how = "whose process has died"
		}
		r.liveStuckSaid = fmt.Sprintf("the lock is still held by buyer %d, %s, and it never expires, while %s on the shelf: nobody can buy them", h.buyer, how, units(r.shelf))
		if turned {
			r.liveStuckSaid += " (a buyer who came after was turned away)"
		}
		r.announce(now, vocab.Stuck, r.liveStuckSaid, h.buyer)
		return
	}
	// A key a Lock call wrote and no hold has (a lost reply: the Lock said no, or failed, though
	// its write landed) that never expires, once its order has ended and a later buyer was turned
	// away: an orphan nobody will ever release.
	for i := range r.nodes {
		for _, st := range r.nodes[i] {
			o := r.orders[st.lockOrder]
			if st.hold != nil || st.deadline >= 0 || o == nil || !o.ended {
				continue
			}
			if !r.turnedAway(o.buyer, o.endedAt) {
				continue
			}
			r.liveStuckSaid = fmt.Sprintf("a lock buyer %d's Lock wrote, though it did not return holding it, never expires, while %s on the shelf: nobody can buy them (a buyer who came after was turned away)", o.buyer, units(r.shelf))
			r.announce(now, vocab.Stuck, r.liveStuckSaid, o.buyer)
			return
		}
	}
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

// Shelf is the stock as last written.
func (r *Referee) Shelf() int { return r.shelf }

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

// turnedAway reports whether an order of a buyer other than owner, begun a TTL or more after done,
// was turned away: past any lease the owner's lock could have had — by Redis's TTL, or by a time
// stored in the lock that a later buyer would take it over at —, the lock still keeps buyers out.
func (r *Referee) turnedAway(owner int, done time.Duration) bool {
	return slices.ContainsFunc(r.lost, func(j Rejection) bool {
		x := r.orderOf(j)
		return j.Buyer != owner && x != nil && x.began >= done+r.h.Timing.TTL
	})
}

// orderOf is the order a rejection turned away.
func (r *Referee) orderOf(j Rejection) *rorder { return r.orders[j.Order] }
