package picture

import (
	"slices"
	"strconv"
	"time"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

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
		case Try:
			if b.woken { // its first try since a wake-up was published: what woke it
				b.woken = false
				m = Woken
			}
			draw(e.Buyer, at, m, "", "")
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
		if e.Peek() {
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
		for n, w := range f.buyers { // whoever waits now is woken: its next try is the wake-up's
			w.woken = n != e.Buyer && len(w.waits) > 0 && len(w.inside) == 0
		}
	case referee.EvLine:
		if b != nil { // Buyer joined the line
			draw(e.Buyer, at, Queued, "", "")
		}
	case referee.EvFault:
		lane := e.Buyer
		if b == nil { // a fault on no buyer: on the ruler
			lane = Ruler
		}
		if e.Fault == "clock-skew" && b != nil { // whose clock is wrong, on its own lane
			draw(lane, at, Skewed, "", "")
			break
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
		if e.NotJudgedBy != "" { // seen, not judged here: no violation, no red flag
			draw(Ruler, at, Seen, "", "")
			break
		}
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
	case referee.EvNested:
		// a re-entry: the hold goes on, entered Depth times (the outer Lock's and the nested
		// ones'), drawn under it until an Unlock gives the last nested entry back
		if e.Depth > 1 {
			f.begin(e.Buyer, Nested, at, i)
		} else {
			f.end(e.Buyer, Nested, at)
		}
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
