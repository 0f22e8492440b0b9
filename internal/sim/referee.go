package sim

import (
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// referee sees every event of an arena and judges the invariants. Its methods run with the
// arena's mu held. It judges from what it can observe, never from what a step says: the critical
// section is the span of an order's stock commands in the inventory's own order, a refusal is an
// order that never got in, a release is a command its watcher saw remove the lock. Hazard: what it
// cannot observe it must say (blind), or a verdict would rest on partial evidence in silence.
type referee struct {
	initial    int
	shelf      int   // the stock as last written, in the inventory's order
	shelfSeq   int64 // the sequence number of that write
	confirmed  int   // stock writes the inventory accepted
	commands   int
	failedOver bool

	orders   []*order
	pairs    map[[2]int]bool // order ids found overlapping
	overlaps []Overlap
	foreign  []Foreign
	lost     []Rejection
	reentry  []Reentry
	blinds   []Blind
	waits    waits
	told     map[steps.Kind]bool // kinds already announced live
}

func newReferee(stock int) referee {
	return referee{initial: stock, shelf: stock, pairs: map[[2]int]bool{}, told: map[steps.Kind]bool{}, waits: newWaits()}
}

// Overlap is a time two orders were inside the critical section together: the second read the
// stock before the first wrote it (or, if the first wrote nothing, before it left).
type Overlap struct {
	A    int           `json:"a"` // the buyer whose order got in first
	B    int           `json:"b"` // the buyer whose order got in while A's was inside (may be A)
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// Foreign is a lock deleted or replaced by a process that did not own it.
type Foreign struct {
	By    int           `json:"by"`
	Owner int           `json:"owner"`
	Node  int           `json:"node"`
	At    time.Duration `json:"at_ns"`
}

// Rejection is an order that sold nothing and never got in while units remained.
type Rejection struct {
	Buyer int           `json:"buyer"`
	Stock int           `json:"stock"` // units on the shelf when it was turned away
	At    time.Duration `json:"at_ns"`
}

// Reentry is a nested acquire that failed.
type Reentry struct {
	Buyer int           `json:"buyer"`
	Why   string        `json:"why"`
	At    time.Duration `json:"at_ns"`
}

// Blind is something the referee could not observe, and the kinds it leaves unjudged.
type Blind struct {
	Kinds []steps.Kind `json:"kinds"`
	What  string       `json:"what"`
}

func (r *referee) announce(a *Arena, k steps.Kind, sentence string) {
	if r.told[k] {
		return
	}
	r.told[k] = true
	a.emit(Event{Kind: EvViolation, Viol: k, Detail: sentence})
}

// firstInside is the order inside the critical section that got in first, or nil.
func (r *referee) firstInside() *order {
	var first *order
	for _, o := range r.window() {
		if o.entered() && o.endSeq == 0 && (first == nil || o.readSeq < first.readSeq) {
			first = o
		}
	}
	return first
}

// window is the orders that can still be found overlapping a new span: every open one, and the
// most recent ones (a reply can reach Go late, so a closed span stays a candidate for a while).
func (r *referee) window() []*order {
	const recent = 256
	if len(r.orders) <= recent {
		return r.orders
	}
	w := r.orders[len(r.orders)-recent:]
	for _, o := range r.orders[:len(r.orders)-recent] {
		if o.entered() && o.endSeq == 0 {
			w = append(w, o)
		}
	}
	return w
}

func (r *referee) read(a *Arena, o *order, seq int64, stock int) {
	if o.entered() {
		return
	}
	o.readSeq, o.readAt = seq, a.Since()
	a.emit(Event{Kind: EvEnter, Buyer: o.p.n, Order: o.k, Stock: stock})
	r.checkOverlaps(a, o)
}

func (r *referee) wrote(a *Arena, o *order, seq int64, stock int) {
	o.confirmed++
	r.confirmed++
	if seq > r.shelfSeq {
		r.shelf, r.shelfSeq = stock, seq
	}
	a.emit(Event{Kind: EvWrite, Buyer: o.p.n, Order: o.k, Stock: stock})
	if over := r.confirmed - (r.initial - r.shelf); over > 0 {
		r.announce(a, steps.Oversold, oversoldSentence(r.confirmed, r.initial-r.shelf))
	}
	r.leave(a, o, seq, true)
}

// leave ends o's critical section at seq: for good at a stock write (final), or, for an order that
// has not written, at a stand-in moment (its unlock began, its handler returned, it died), which a
// later write replaces.
func (r *referee) leave(a *Arena, o *order, seq int64, final bool) {
	if !o.entered() || seq == 0 {
		return
	}
	first := o.endSeq == 0
	switch {
	case final && (!o.final || seq > o.endSeq):
		o.endSeq, o.endAt, o.final = seq, a.Since(), true
	case !final && first:
		o.endSeq, o.endAt = seq, a.Since()
	default:
		return
	}
	if first {
		a.emit(Event{Kind: EvExit, Buyer: o.p.n, Order: o.k})
	}
	r.checkOverlaps(a, o)
}

// checkOverlaps decides every pair of o and another order that the spans known so far prove
// overlapping.
func (r *referee) checkOverlaps(a *Arena, o *order) {
	for _, x := range r.window() {
		if x != o && x.entered() {
			r.decide(a, x, o, false)
		}
	}
}

// decide records x and y as overlapping if the one that got in first had not left when the other
// got in. An open span counts as not yet left only when final (the run is over).
func (r *referee) decide(a *Arena, x, y *order, final bool) {
	if x.readSeq > y.readSeq {
		x, y = y, x
	}
	key := [2]int{x.id, y.id}
	if r.pairs[key] {
		return
	}
	if x.endSeq == 0 && !final {
		return
	}
	if x.endSeq != 0 && y.readSeq > x.endSeq {
		return
	}
	r.pairs[key] = true
	to := x.endAt
	if x.endSeq == 0 {
		to = a.Since()
	}
	ov := Overlap{A: x.p.n, B: y.p.n, From: y.readAt, To: max(to, y.readAt)}
	r.overlaps = append(r.overlaps, ov)
	a.emit(Event{Kind: EvOverlap, Buyer: ov.B, Other: ov.A, Detail: ov.String()})
	r.announce(a, steps.Overlap, ov.String())
}

func (r *referee) foreignRelease(a *Arena, by, owner int, e *nodeEye) {
	f := Foreign{By: by, Owner: owner, Node: e.i, At: a.Since()}
	r.foreign = append(r.foreign, f)
	a.emit(Event{Kind: EvForeign, Buyer: by, Other: owner, Node: e.i})
	r.announce(a, steps.ForeignRelease, f.String())
}

func (r *referee) rejected(a *Arena, o *order) {
	if r.shelf <= 0 {
		return
	}
	j := Rejection{Buyer: o.p.n, Stock: r.shelf, At: a.Since()}
	r.lost = append(r.lost, j)
	a.emit(Event{Kind: EvRejected, Buyer: o.p.n, Stock: r.shelf})
	r.announce(a, steps.LostSales, j.String())
}

func (r *referee) reentryFailed(a *Arena, n int, why string) {
	e := Reentry{Buyer: n, Why: why, At: a.Since()}
	r.reentry = append(r.reentry, e)
	a.emit(Event{Kind: EvReentry, Buyer: n, Detail: why})
	r.announce(a, steps.ReentryFailed, e.String())
}

// waiting notes that a lock command of call c found the lock held by owner (once an order).
func (r *referee) waiting(a *Arena, c *call, owner int) {
	if c.p.n == 0 || (c.o != nil && c.o.waited) {
		return
	}
	if c.o != nil {
		c.o.waited = true
	}
	a.emit(Event{Kind: EvWaiting, Buyer: c.p.n, Order: c.order(), Other: owner})
}

// blind records something the referee could not observe, once per sentence.
func (r *referee) blind(k steps.Kind, what string) {
	for _, b := range r.blinds {
		if b.What == what {
			return
		}
	}
	r.blinds = append(r.blinds, Blind{Kinds: []steps.Kind{k}, What: what})
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func (o Overlap) String() string {
	d := o.To - o.From
	span := ms(d)
	if d < time.Millisecond {
		span = "less than 1 ms"
	}
	if o.A == o.B {
		return fmt.Sprintf("two orders of buyer %d were both inside the critical section for %s", o.A, span)
	}
	return fmt.Sprintf("buyer %d and buyer %d were both inside the critical section for %s", o.A, o.B, span)
}

func (f Foreign) String() string {
	return fmt.Sprintf("buyer %d deleted the lock that buyer %d held", f.By, f.Owner)
}

func (j Rejection) String() string {
	return fmt.Sprintf("buyer %d was turned away while %s on the shelf", j.Buyer, units(j.Stock))
}

func (e Reentry) String() string {
	return fmt.Sprintf("buyer %d could not re-enter the lock it held: %s", e.Buyer, e.Why)
}

// units says "1 unit was" / "3 units were".
func units(n int) string {
	if n == 1 {
		return "1 unit was"
	}
	return fmt.Sprintf("%d units were", n)
}

func oversoldSentence(confirmed, left int) string {
	verb := "units left"
	if left == 1 {
		verb = "unit left"
	}
	return fmt.Sprintf("%d orders confirmed but only %d %s the shelf: %d oversold", confirmed, left, verb, confirmed-left)
}

// released ends o's hold, if it had one: its last Unlock returned, or it ended or died holding.
func (r *referee) released(a *Arena, o *order) {
	o.holds = 0
}
