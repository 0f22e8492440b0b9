package picture

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

// Lanes: buyer n's lane is n (from 1); lock node i's is Node(i); the lock's own lane, whom a
// majority of the nodes gives the lock, is Owner; the inventory's is Inventory; the ruler above
// the lanes (a violation's mark) is Ruler.
const (
	Owner     = 0
	Inventory = -1 << 20
	Ruler     = Inventory - 1
)

// Node is lock node i's lane (i from 0).
func Node(i int) int { return -1 - i }

// NodeOf is the node of lane l, and whether l is a node's lane.
func NodeOf(l int) (int, bool) { return -1 - l, l < 0 && l > Inventory }

// Kind is what a stretch of a lane shows.
type Kind uint8

// The kinds of stretches. A buyer's: it waits for the lock, works without one (a step that takes
// none), holds the lock, is inside the critical section, overlaps (the referee found it inside
// together with another order), is cut off from the lock server, frozen, crashed. A node's and the Owner lane's: Held, a
// buyer's lock there.
const (
	Wait Kind = iota
	Work
	Hold
	Inside
	Overlap
	Cut
	Frozen
	Dead
	Held
)

// Class is the page's class for a stretch of kind k.
func (k Kind) Class() string {
	return [...]string{"wait", "work", "hold", "in", "over", "cut", "frozen", "dead", "lock"}[k]
}

// Span is one stretch of a lane, from From to To (To is the fold's latest moment while Open).
type Span struct {
	Lane     int
	Kind     Kind
	From, To time.Duration
	Open     bool
	Holder   int    // Held: whose lock
	Left     bool   // Held: what a hold left on a node after it ended on another
	Why      string // Held: why it ended, where no event of its own said so ("taken over")
	Event    int    // the event it is about (the fold's count from 0: the acquiring event, the crash), -1 for none
}

// Drawn is a mark drawn on a lane: mark ID at At. Text replaces the mark's glyph where the
// glyph is a number (the stock a read or write saw); Label says whose it is ("b2·t5").
type Drawn struct {
	Lane        int
	At          time.Duration
	ID          ID
	Text, Label string
}

// Glyph is how d is drawn.
func (d Drawn) Glyph() string {
	if d.Text != "" {
		return d.Text
	}
	return d.ID.Glyph()
}

// State is what a buyer's lane is at a moment, weakest first: a terminal column shows the
// strongest state it saw.
type State uint8

// The states.
const (
	Idle State = iota
	Waits
	Works     // at work without a lock (a step that takes none): no critical section to be in
	Holds     // owns the lock, outside the critical section
	In        // inside the critical section
	CutOff    // cut off from the lock server (a partition), not inside
	CutIn     // inside, cut off from the lock server: its lock cannot tell it anything
	Overlaps  // inside together with another order, as the referee found it
	IsFrozen  // its process is frozen
	IsCrashed // its process died
)

// Flags is a set of kinds, a bit each.
type Flags uint16

// StateOf is the state a lane shows with the kinds in f.
func StateOf(f Flags) State {
	has := func(k Kind) bool { return f&(1<<k) != 0 }
	switch {
	case has(Dead):
		return IsCrashed
	case has(Frozen):
		return IsFrozen
	case has(Overlap):
		return Overlaps
	case has(Cut) && has(Inside):
		return CutIn
	case has(Cut):
		return CutOff
	case has(Inside):
		return In
	case has(Hold):
		return Holds
	case has(Work):
		return Works
	case has(Wait):
		return Waits
	}
	return Idle
}

// open is a stretch under way.
type open struct {
	from  time.Duration
	event int
}

// buyer is one buyer as the events tell it.
type buyer struct {
	under  map[int]bool // orders started and not returned
	waits  map[int]open // order → its wait (or, with no lock, its work)
	inside map[int]open // order → inside since
	state  map[Kind]open
}

// node is the lock on one node: whose, since when, and whether it is what an ended hold left.
type node struct {
	holder int
	from   time.Duration
	event  int
	left   bool
}

// Fold folds the referee's events, in order, into lanes: each buyer's stretches (waiting, inside,
// holding, frozen, …), each lock node's holds, the Owner lane, and the marks of commands and
// happenings. The terminal and the page both draw from it.
//
// Hazard: the holds follow the referee (docs/architecture.md): a buyer's hold begins at its first
// lock and ends when the first of its keys is gone; on a quorum, what it wrote on the other
// nodes stays as what it left (Span.Left) until its own event says it went.
type Fold struct {
	noLock bool
	n      int // events added
	now    time.Duration
	buyers map[int]*buyer
	nodes  []*node
	owner  Span // the Owner lane's stretch under way (Holder 0: free)
	spans  []Span
	marks  []Drawn // by At
}

// NewFold is an empty fold of a lock of nodes nodes (at least one); noLock: the step takes no
// lock, and an order is at work from its start.
func NewFold(nodes int, noLock bool) *Fold {
	f := &Fold{noLock: noLock, buyers: map[int]*buyer{}, owner: Span{Lane: Owner, Kind: Held, Event: -1}}
	for range max(nodes, 1) {
		f.nodes = append(f.nodes, &node{})
	}
	return f
}

// Events is how many events were added.
func (f *Fold) Events() int { return f.n }

// Now is the latest moment the fold knows.
func (f *Fold) Now() time.Duration { return f.now }

// Advance moves the fold's clock to at (a live session's time, between events).
func (f *Fold) Advance(at time.Duration) { f.now = max(f.now, at) }

// Nodes is how many lock nodes the fold draws.
func (f *Fold) Nodes() int { return len(f.nodes) }

func (f *Fold) buyer(n int) *buyer {
	b := f.buyers[n]
	if b == nil {
		b = &buyer{under: map[int]bool{}, waits: map[int]open{}, inside: map[int]open{}, state: map[Kind]open{}}
		f.buyers[n] = b
	}
	return b
}

func (f *Fold) node(i int) *node {
	for len(f.nodes) <= i {
		f.nodes = append(f.nodes, &node{})
	}
	return f.nodes[max(i, 0)]
}

// Add folds event e in and returns the marks it drew, the one that stands for the event first
// (the inventory's for a stock read or write).
func (f *Fold) Add(e referee.Event) []Drawn {
	i := f.n
	f.n++
	f.Advance(e.At)
	at := e.At
	var out []Drawn
	draw := func(lane int, at time.Duration, id ID, text, label string) {
		d := Drawn{Lane: lane, At: at, ID: id, Text: text, Label: label}
		k := len(f.marks)
		for k > 0 && f.marks[k-1].At > at { // a mark drawn back in time (an expiry seen late)
			k--
		}
		f.marks = slices.Insert(f.marks, k, d)
		out = append(out, d)
	}
	var b *buyer
	if e.Buyer > 0 {
		b = f.buyer(e.Buyer)
	}
	stock := func(id ID) {
		label := "b" + strconv.Itoa(e.Buyer)
		if e.Token != 0 {
			label += "·t" + strconv.FormatInt(e.Token, 10)
		}
		text := ""
		if id != Fenced {
			text = strconv.Itoa(e.Stock)
		}
		draw(Inventory, at, id, text, label)
	}
	switch e.Kind {
	case referee.EvCommand:
		if b == nil {
			break
		}
		// a buyer with an order waiting, none inside, and not the lock's owner (on a quorum, the
		// majority's) tries for the lock with what it sends in Lock
		waiter := !f.noLock && len(b.waits) > 0 && len(b.inside) == 0 && f.owner.Holder != e.Buyer
		switch m := OfCommand(e.Cmd, waiter); m {
		case None:
		case StockSet:
			// drawn where the write lands (EvWrite): a paused process sends it only after its pause
		default:
			draw(e.Buyer, at, m, "", "")
		}
	case referee.EvStart:
		b.under[e.Order] = true
		if _, ok := b.waits[e.Order]; !ok {
			b.waits[e.Order] = open{from: at, event: -1}
		}
	case referee.EvEnter:
		stock(Read)
		if !f.noLock && !e.Granted {
			break // a read before the order's Lock said yes (a peek): it is not inside
		}
		if !f.noLock {
			f.endWait(e.Buyer, e.Order, at)
		}
		if _, in := b.inside[e.Order]; !in {
			b.inside[e.Order] = open{from: at, event: i}
		}
	case referee.EvWrite:
		stock(Wrote)
		draw(e.Buyer, at, StockSet, "", "")
	case referee.EvFenced:
		stock(Fenced)
		draw(e.Buyer, at, Fenced, "", "")
	case referee.EvExit:
		f.endInside(e.Buyer, e.Order, at)
	case referee.EvRefused:
		// Lock answered false: the order stops waiting (it returns, or tries again later)
		if !f.noLock {
			f.endWait(e.Buyer, e.Order, at)
		}
		draw(e.Buyer, at, Refused, "", "")
	case referee.EvDone:
		delete(b.under, e.Order)
		f.endWait(e.Buyer, e.Order, at)
		f.endInside(e.Buyer, e.Order, at)
		switch {
		case e.Sold && e.Err == "":
			draw(e.Buyer, at, Sold, "", "")
		case e.Err != "":
			draw(e.Buyer, at, Failed, "", "")
		default:
			draw(e.Buyer, at, NoSale, "", "")
		}
	case referee.EvRejected:
		draw(e.Buyer, at, Rejected, "", "")
	case referee.EvWaiting:
		draw(e.Buyer, at, Waiting, "", "")
	case referee.EvPublish:
		if b != nil { // a probe's command (buyer 0) has no lane
			draw(e.Buyer, at, Publish, "", "")
		}
	case referee.EvFault:
		lane := e.Buyer
		if b == nil { // a fault on no buyer: on the ruler
			lane = Ruler
		}
		draw(lane, at, Fault, "", string(e.Fault))
	case referee.EvFrozen:
		f.begin(e.Buyer, Frozen, at, -1)
	case referee.EvThawed:
		f.end(e.Buyer, Frozen, at)
	case referee.EvPartitioned:
		f.begin(e.Buyer, Cut, at, -1)
	case referee.EvHealed:
		f.end(e.Buyer, Cut, at)
	case referee.EvCrashed:
		f.end(e.Buyer, Frozen, at)
		f.end(e.Buyer, Cut, at)
		for k := range b.waits {
			f.endWait(e.Buyer, k, at)
		}
		for k := range b.inside {
			f.endInside(e.Buyer, k, at)
		}
		clear(b.under)
		f.begin(e.Buyer, Dead, at, i)
		draw(e.Buyer, at, Crashed, "", "")
	case referee.EvReentry:
		if e.OK {
			draw(e.Buyer, at, Reentry, "", "")
		} else {
			draw(e.Buyer, at, ReentryFailed, "", "")
		}
	case referee.EvViolation:
		draw(Ruler, at, Violation, "", "")
	case referee.EvOverlap:
		// the referee's: two orders inside together, each having read what the other's write
		// then made stale, from the later read to the earlier write. It decides it in the
		// inventory's order, when the later write lands, so the stretch is drawn back in time.
		for _, n := range []int{e.Buyer, e.Other} {
			if n > 0 {
				f.spans = append(f.spans, Span{Lane: n, Kind: Overlap, From: e.From, To: max(e.To, e.From), Event: i})
			}
		}
	case referee.EvAcquired:
		n := f.node(e.Node)
		if n.holder != 0 && n.holder != e.Buyer {
			// another process's write left the previous holder none of its lock: a takeover
			f.endNode(e.Node, at, "taken over")
		}
		if n.holder == 0 {
			*n = node{holder: e.Buyer, from: at, event: i}
		}
		if _, ok := b.state[Hold]; !ok {
			f.begin(e.Buyer, Hold, at, i)
		}
		draw(Node(e.Node), at, Acquired, "", "")
	case referee.EvReleased:
		f.endHold(e.Buyer, e.Node, at, e.Left)
		draw(Node(e.Node), at, Released, "", "")
	case referee.EvForeign:
		f.endHold(e.Other, e.Node, at, e.Left)
		m := Foreign
		if e.Left { // no hold ended here, and no violation
			m = Left
		}
		draw(Node(e.Node), at, m, "", "b"+strconv.Itoa(e.Buyer))
	case referee.EvExpired:
		// The referee sees an expiry at the next command on the node; Redis dropped the key
		// when its TTL ran out (Due, where known), so that is where it is drawn.
		when := at
		if e.Due > 0 && e.Due <= e.At {
			when = e.Due
		}
		if e.Other > 0 {
			f.endHold(e.Other, e.Node, when, e.Left)
		}
		draw(Node(e.Node), when, Expired, "", "")
		f.setOwner(when, i)
	case referee.EvLost:
		f.endHold(e.Other, e.Node, at, e.Left)
		draw(Node(e.Node), at, Lost, "", "")
	case referee.EvFailover:
		draw(Node(e.Node), at, Failover, "", "")
	case referee.EvRestart:
		draw(Node(e.Node), at, Restart, "", "")
	case referee.EvFree:
		// Every hold has ended: one another process's write took over ends here, with no event
		// of its own (an expiry is seen late: the lock came free at Due).
		when := min(at, max(e.Due, 0))
		for n, bu := range f.buyers {
			if _, ok := bu.state[Hold]; ok {
				f.endHold(n, -1, when, false)
			}
		}
	}
	f.setOwner(at, i)
	return out
}

// Holds is how many nodes hold buyer n's lock (what an ended hold left there included).
func (f *Fold) Holds(n int) int { return f.holds(n) }

// holds is how many nodes hold buyer n's lock.
func (f *Fold) holds(n int) int {
	k := 0
	for _, x := range f.nodes {
		if x.holder == n && n != 0 {
			k++
		}
	}
	return k
}

// Holder is the buyer whose lock node i holds (what an ended hold left there included), 0 if
// none.
func (f *Fold) Holder(i int) int {
	if i < 0 || i >= len(f.nodes) {
		return 0
	}
	return f.nodes[i].holder
}

// Owner is the buyer a majority of the nodes gives the lock, 0 if none.
func (f *Fold) Owner() int { return f.owner.Holder }

// setOwner moves the Owner lane to the majority's holder, if it changed, at at.
func (f *Fold) setOwner(at time.Duration, event int) {
	o := 0
	for _, x := range f.nodes {
		if x.holder != 0 && f.holds(x.holder)*2 > len(f.nodes) {
			o = x.holder
			break
		}
	}
	if o == f.owner.Holder {
		return
	}
	if f.owner.Holder != 0 {
		s := f.owner
		s.To = max(at, s.From)
		f.spans = append(f.spans, s)
	}
	f.owner = Span{Lane: Owner, Kind: Held, From: at, Holder: o, Event: event}
}

// begin opens a stretch of kind k on buyer n's lane, unless one is open.
func (f *Fold) begin(n int, k Kind, at time.Duration, event int) {
	b := f.buyer(n)
	if _, ok := b.state[k]; !ok {
		b.state[k] = open{from: at, event: event}
	}
}

// end closes buyer n's stretch of kind k, if one is open.
func (f *Fold) end(n int, k Kind, at time.Duration) {
	b := f.buyer(n)
	if o, ok := b.state[k]; ok {
		f.spans = append(f.spans, Span{Lane: n, Kind: k, From: o.from, To: max(at, o.from), Event: o.event})
		delete(b.state, k)
	}
}

// endWait ends order k's wait (its work, with no lock) at at.
func (f *Fold) endWait(n, k int, at time.Duration) {
	b := f.buyer(n)
	if o, ok := b.waits[k]; ok {
		kind := Wait
		if f.noLock {
			kind = Work
		}
		f.spans = append(f.spans, Span{Lane: n, Kind: kind, From: o.from, To: max(at, o.from), Event: -1})
		delete(b.waits, k)
	}
}

// endInside ends order k's stretch inside at at.
func (f *Fold) endInside(n, k int, at time.Duration) {
	b := f.buyer(n)
	if o, ok := b.inside[k]; ok {
		f.spans = append(f.spans, Span{Lane: n, Kind: Inside, From: o.from, To: max(at, o.from), Event: -1})
		delete(b.inside, k)
	}
}

// endHold says, at at, that buyer n's lock on node i is gone (i -1: on no node in particular).
// left: it was what n's hold left there, and the hold had ended already. Otherwise n's hold ends,
// and what n wrote on the other nodes stays as what it left, until its own event says it went.
func (f *Fold) endHold(n, i int, at time.Duration, left bool) {
	if i >= 0 && i < len(f.nodes) && f.nodes[i].holder == n {
		f.endNode(i, at, "")
	}
	if left {
		return
	}
	f.end(n, Hold, at)
	for j, x := range f.nodes {
		if x.holder != n || x.left {
			continue
		}
		ev := x.event
		f.endNode(j, at, "")
		if i >= 0 {
			*f.nodes[j] = node{holder: n, from: at, event: ev, left: true}
		}
	}
}

// endNode ends the hold on node i at at; why says why, where no event of its own did. A hold
// taken over on the last node its holder had ends its buyer's hold there too.
func (f *Fold) endNode(i int, at time.Duration, why string) {
	x := f.nodes[i]
	if x.holder == 0 {
		return
	}
	f.spans = append(f.spans, Span{Lane: Node(i), Kind: Held, From: x.from, To: max(at, x.from), Holder: x.holder, Left: x.left, Why: why, Event: x.event})
	n := x.holder
	*x = node{}
	if why != "" && f.holds(n) == 0 {
		f.end(n, Hold, at)
	}
}

// Spans are the lanes' stretches that reach from or later, in no order; those under way end at
// the fold's latest moment (Open).
func (f *Fold) Spans(from time.Duration) []Span {
	var out []Span
	f.EachSpan(from, func(s Span) { out = append(out, s) })
	return out
}

// EachSpan calls fn with each stretch Spans(from) returns.
func (f *Fold) EachSpan(from time.Duration, fn func(Span)) {
	for _, s := range f.spans {
		if s.To >= from {
			fn(s)
		}
	}
	add := func(lane int, k Kind, o open) {
		fn(Span{Lane: lane, Kind: k, From: o.from, To: max(f.now, o.from), Open: true, Event: o.event})
	}
	for n, b := range f.buyers {
		for _, o := range b.waits {
			k := Wait
			if f.noLock {
				k = Work
			}
			add(n, k, o)
		}
		for _, o := range b.inside {
			add(n, Inside, o)
		}
		for k, o := range b.state {
			add(n, k, o)
		}
	}
	for i, x := range f.nodes {
		if x.holder != 0 {
			fn(Span{Lane: Node(i), Kind: Held, From: x.from, To: max(f.now, x.from), Open: true, Holder: x.holder, Left: x.left, Event: x.event})
		}
	}
	if f.owner.Holder != 0 {
		s := f.owner
		s.To, s.Open = max(f.now, s.From), true
		fn(s)
	}
}

// Marks are the marks drawn from from to to, in time order.
func (f *Fold) Marks(from, to time.Duration) []Drawn {
	lo, _ := slices.BinarySearchFunc(f.marks, from, func(d Drawn, t time.Duration) int { return cmp.Compare(d.At, t) })
	hi, _ := slices.BinarySearchFunc(f.marks, to+1, func(d Drawn, t time.Duration) int { return cmp.Compare(d.At, t) })
	return f.marks[lo:hi]
}

// Forget drops the stretches that ended and the marks drawn before before: a live session keeps
// what its timeline can still show.
func (f *Fold) Forget(before time.Duration) {
	f.spans = slices.DeleteFunc(f.spans, func(s Span) bool { return s.To < before })
	k, _ := slices.BinarySearchFunc(f.marks, before, func(d Drawn, t time.Duration) int { return cmp.Compare(d.At, t) })
	f.marks = slices.Delete(f.marks, 0, k)
}

// Buyer tells what buyer n's lane is now: its state, and its orders under way, waiting and inside.
func (f *Fold) Buyer(n int) (st State, under, waiting, inside int) {
	b := f.buyers[n]
	if b == nil {
		return Idle, 0, 0, 0
	}
	var fl Flags
	for k := range b.state {
		fl |= 1 << k
	}
	if len(b.inside) > 0 {
		fl |= 1 << Inside
	}
	if len(b.waits) > 0 {
		if f.noLock {
			fl |= 1 << Work
		} else {
			fl |= 1 << Wait
		}
	}
	return StateOf(fl), len(b.under), len(b.waits), len(b.inside)
}

// Under tells whether buyer n's order k is under way (started, not returned).
func (f *Fold) Under(n, k int) bool {
	b := f.buyers[n]
	return b != nil && b.under[k]
}

// UnderOrders are buyer n's orders under way, in order.
func (f *Fold) UnderOrders(n int) []int {
	var out []int
	if b := f.buyers[n]; b != nil {
		for k := range b.under {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
