package main

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/picture"
)

// One play's timeline on the page: the referee's events, as it replays the history, folded into
// lanes of bars and marks (page.go holds what the page shows around it).

// µs is d in whole microseconds.
func µs(d time.Duration) int64 { return d.Microseconds() }

// playDrawing builds one play's timeline from the referee's events.
type playDrawing struct {
	p           *pagePlay
	tb          *pageTables
	buyers      int
	nodes       int
	last        map[[2]int]int // lane, style → its latest mark
	waits       map[[2]int]int64
	insides     map[[2]int]int64
	frozen, cut map[int]int64
	holds       map[int]int64 // buyer → when its hold began
	locks       []*nodeBar    // node → the hold drawn on it, nil when free
}

// nodeBar is a hold drawn on a lock node's lane: held, or, once the hold has ended on another
// node, what it left on this one (left) until that goes too.
type nodeBar struct {
	buyer int
	from  int64
	event int // the acquiring event
	left  bool
}

// newPagePlay replays h through the referee and draws what it emits, its words and styles in tb.
func newPagePlay(h *history.History, tb *pageTables) pagePlay {
	var evs []referee.Event
	ref := referee.NewReferee(*h, func(e referee.Event) { evs = append(evs, e) })
	for _, rec := range h.Records {
		ref.Add(rec)
	}
	d := &playDrawing{p: &pagePlay{TTL: µs(h.Timing.TTL), Bars: [][]any{}}, tb: tb,
		nodes: max(len(h.Nodes), 1), last: map[[2]int]int{},
		waits: map[[2]int]int64{}, insides: map[[2]int]int64{}, frozen: map[int]int64{}, cut: map[int]int64{}, holds: map[int]int64{}}
	d.locks = make([]*nodeBar, d.nodes)
	for _, e := range evs {
		d.buyers = max(d.buyers, e.Buyer, e.Other)
		d.p.End = max(d.p.End, µs(e.At), µs(e.To))
	}
	if len(h.Records) > 0 {
		d.p.End = max(d.p.End, µs(h.Records[len(h.Records)-1].At))
	}
	d.p.End = max(d.p.End, 1)
	for n := 1; n <= d.buyers; n++ {
		d.p.Lanes = append(d.p.Lanes, pageLane{Name: fmt.Sprintf("buyer %d", n), Kind: "buyer"})
	}
	for i := range d.nodes {
		name := "lock"
		if i < len(h.Nodes) && len(h.Nodes) > 1 {
			name = h.Nodes[i]
		}
		d.p.Lanes = append(d.p.Lanes, pageLane{Name: name, Kind: "node"})
	}
	d.p.Lanes = append(d.p.Lanes, pageLane{Name: "inventory", Kind: "inventory"})
	for _, e := range evs {
		d.event(e)
	}
	d.close(d.p.End)
	return *d.p
}

// lanes: buyer n is lane n-1, node i is lane buyers+i, the inventory the last one.
func (d *playDrawing) buyerLane(n int) int { return n - 1 }
func (d *playDrawing) nodeLane(i int) int  { return d.buyers + min(max(i, 0), d.nodes-1) }
func (d *playDrawing) stockLane() int      { return d.buyers + d.nodes }

// bar draws a bar on lane from from to to.
func (d *playDrawing) bar(lane int, from, to int64, class, label string, event int) {
	d.p.Bars = append(d.p.Bars, []any{lane, from, max(to, from), class, label, event})
}

// mark draws event i as mark mk (picture.Marks) on lane at at, labelled label.
func (d *playDrawing) mark(i, lane int, at int64, mk picture.ID, label string) int {
	return d.markAs(i, lane, at, picture.Marks[mk].Class, mk.Glyph(), label)
}

// markAs draws event i as a mark on lane at at, or counts it into the lane's latest mark of the
// same class and glyph when that one is less than markSpan of the play away. Only the
// inventory's stock counts are drawn with no entry of picture.Marks: their glyph is the count.
func (d *playDrawing) markAs(i, lane int, at int64, class, glyph, label string) int {
	key := [2]int{lane, d.tb.styleOf(pageStyle{class, glyph, label})}
	if m, ok := d.last[key]; ok {
		if prev := &d.p.Marks[m]; float64(at-prev.At) < markSpan*float64(d.p.End) {
			prev.Count++
			return m
		}
	}
	d.p.Marks = append(d.p.Marks, pageMark{Lane: lane, At: at, Style: key[1], First: i, Count: 1})
	d.last[key] = len(d.p.Marks) - 1
	return len(d.p.Marks) - 1
}

// event draws one of the referee's events, in its order. A command that falls on the mark of
// the commands before it is counted there and not kept for ←/→ (Thinned): in a load run in
// virtual time a spinning waiter sends tens of thousands, as the terminal lab's feed drops them
// past its limit. Every other event is kept.
func (d *playDrawing) event(e referee.Event) {
	i := len(d.p.Events) // its index among the events kept
	at := µs(e.At)
	lane, m := -1, -1
	if e.Buyer > 0 {
		lane = d.buyerLane(e.Buyer)
	}
	order := [2]int{e.Buyer, e.Order}
	switch e.Kind {
	case referee.EvStart:
		d.waits[order] = at
	case referee.EvCommand:
		if mk := picture.OfCommand(e.Cmd, d.waiter(order)); mk != picture.None && e.Buyer > 0 {
			m = d.mark(i, lane, at, mk, "")
		}
	case referee.EvEnter:
		d.endWait(order, at)
		if _, in := d.insides[order]; !in {
			d.insides[order] = at
		}
		lane = d.stockLane()
		m = d.markAs(i, lane, at, "read", fmt.Sprint(e.Stock), stockLabel(e))
	case referee.EvWrite:
		lane = d.stockLane()
		m = d.markAs(i, lane, at, "write", fmt.Sprint(e.Stock), stockLabel(e))
	case referee.EvFenced:
		lane = d.stockLane()
		m = d.mark(i, lane, at, picture.Fenced, stockLabel(e))
	case referee.EvExit:
		if from, ok := d.insides[order]; ok {
			d.bar(d.buyerLane(e.Buyer), from, at, "in", "", -1)
			delete(d.insides, order)
		}
	case referee.EvDone:
		d.endWait(order, at)
		if from, ok := d.insides[order]; ok {
			d.bar(d.buyerLane(e.Buyer), from, at, "in", "", -1)
			delete(d.insides, order)
		}
		switch {
		case e.Sold && e.Err == "":
			m = d.mark(i, lane, at, picture.Sold, "")
		case e.Err != "":
			m = d.mark(i, lane, at, picture.Failed, "")
		default:
			m = d.mark(i, lane, at, picture.NoSale, "")
		}
	case referee.EvRejected:
		m = d.mark(i, lane, at, picture.Rejected, "")
	case referee.EvRefused:
		m = d.mark(i, lane, at, picture.Refused, "")
	case referee.EvWaiting:
		m = d.mark(i, lane, at, picture.Waiting, "")
	case referee.EvOverlap:
		d.p.Overlaps++
		for _, b := range []int{e.Buyer, e.Other} {
			if b > 0 {
				d.bar(d.buyerLane(b), µs(e.From), µs(e.To), "over", "", i)
			}
		}
	case referee.EvFault:
		m = d.mark(i, lane, at, picture.Fault, string(e.Fault))
	case referee.EvFrozen:
		d.frozen[e.Buyer] = at
	case referee.EvThawed:
		d.endState(d.frozen, e.Buyer, at, "frozen")
	case referee.EvPartitioned:
		d.cut[e.Buyer] = at
	case referee.EvHealed:
		d.endState(d.cut, e.Buyer, at, "cut")
	case referee.EvCrashed:
		d.endState(d.frozen, e.Buyer, at, "frozen")
		d.endState(d.cut, e.Buyer, at, "cut")
		for o, from := range d.waits {
			if o[0] == e.Buyer {
				d.bar(lane, from, at, "wait", "", -1)
				delete(d.waits, o)
			}
		}
		for o, from := range d.insides {
			if o[0] == e.Buyer {
				d.bar(lane, from, at, "in", "", -1)
				delete(d.insides, o)
			}
		}
		d.bar(lane, at, d.p.End, "dead", "", i)
		m = d.mark(i, lane, at, picture.Crashed, "")
	case referee.EvReentry:
		if e.OK {
			m = d.mark(i, lane, at, picture.Reentry, "")
		} else {
			m = d.mark(i, lane, at, picture.ReentryFailed, "")
		}
	case referee.EvViolation:
		lane = -1
		m = d.mark(i, -1, at, picture.Violation, "")
	case referee.EvAcquired:
		lane = d.nodeLane(e.Node)
		n := lane - d.buyers
		if prev := d.locks[n]; prev != nil && prev.buyer != e.Buyer {
			// another process's write left the previous holder none of its lock: a takeover
			d.endNode(n, at, "taken over")
		}
		if d.locks[n] == nil {
			d.locks[n] = &nodeBar{buyer: e.Buyer, from: at, event: i}
		}
		if _, ok := d.holds[e.Buyer]; !ok {
			d.holds[e.Buyer] = at
		}
		m = d.mark(i, lane, at, picture.Acquired, "")
	case referee.EvReleased:
		lane = d.nodeLane(e.Node)
		d.endHold(e.Buyer, lane-d.buyers, at, e.Left)
		m = d.mark(i, lane, at, picture.Released, "")
	case referee.EvForeign:
		lane = d.nodeLane(e.Node)
		d.endHold(e.Other, lane-d.buyers, at, e.Left)
		mk := picture.Foreign
		if e.Left { // no hold ended here, and no violation
			mk = picture.Left
		}
		m = d.mark(i, lane, at, mk, fmt.Sprintf("b%d", e.Buyer))
	case referee.EvExpired:
		lane = d.nodeLane(e.Node)
		when := at
		if e.Due > 0 && e.Due <= e.At {
			when = µs(e.Due)
		}
		if e.Other > 0 {
			d.endHold(e.Other, lane-d.buyers, when, e.Left)
		}
		m = d.mark(i, lane, when, picture.Expired, "")
	case referee.EvLost:
		lane = d.nodeLane(e.Node)
		d.endHold(e.Other, lane-d.buyers, at, e.Left)
		m = d.mark(i, lane, at, picture.Lost, "")
	case referee.EvFailover:
		lane = d.nodeLane(e.Node)
		m = d.mark(i, lane, at, picture.Failover, "")
	case referee.EvRestart:
		lane = d.nodeLane(e.Node)
		m = d.mark(i, lane, at, picture.Restart, "")
	case referee.EvFree:
		// Every hold has ended: one another process's write took over ends here, with no event
		// of its own (an expiry is seen late: the lock came free at Due).
		for b := range d.holds {
			d.endHold(b, -1, min(at, max(µs(e.Due), 0)), false)
		}
	}
	if e.Kind == referee.EvCommand && m >= 0 && d.p.Marks[m].Count > 1 {
		d.p.Thinned++
		return
	}
	d.p.Events = append(d.p.Events, pageEvent{At: at, Lane: lane, Word: d.tb.wordOf(e.Words()), Mark: m})
}

// waiter tells whether order o waits for another's lock: it waits, and its buyer holds none.
func (d *playDrawing) waiter(o [2]int) bool {
	_, waits := d.waits[o]
	_, holds := d.holds[o[0]]
	return waits && !holds
}

// endWait ends order o's wait at at: its first read, or its end without one.
func (d *playDrawing) endWait(o [2]int, at int64) {
	if from, ok := d.waits[o]; ok {
		d.bar(d.buyerLane(o[0]), from, at, "wait", "", -1)
		delete(d.waits, o)
	}
}

// endState ends a frozen or cut-off stretch of buyer b at at.
func (d *playDrawing) endState(open map[int]int64, b int, at int64, class string) {
	if from, ok := open[b]; ok {
		d.bar(d.buyerLane(b), from, at, class, "", -1)
		delete(open, b)
	}
}

// endHold says, at at, that buyer b's lock on node n is gone (n -1: on no node in particular).
// left: it was what b's hold left there, and the hold had ended already. Otherwise b's hold ends:
// the referee ends a hold when the first of its keys is gone (docs/architecture.md), so on a
// quorum's other nodes what b wrote stays, drawn as what it left, until its own event says it
// went.
func (d *playDrawing) endHold(b, n int, at int64, left bool) {
	if n >= 0 && d.locks[n] != nil && d.locks[n].buyer == b {
		d.endNode(n, at, "")
	}
	if left {
		return
	}
	if from, ok := d.holds[b]; ok {
		d.bar(d.buyerLane(b), from, at, "hold", "", -1)
		delete(d.holds, b)
	}
	for i, nb := range d.locks {
		if nb == nil || nb.buyer != b || nb.left {
			continue
		}
		if n < 0 {
			d.endNode(i, at, "")
			continue
		}
		d.endNode(i, at, "")
		d.locks[i] = &nodeBar{buyer: b, from: at, event: nb.event, left: true}
	}
}

// endNode ends the hold drawn on node i at at.
func (d *playDrawing) endNode(i int, at int64, why string) {
	nb := d.locks[i]
	if nb == nil {
		return
	}
	label, class := fmt.Sprintf("b%d", nb.buyer), fmt.Sprintf("lock own%d", (nb.buyer-1)%8+1)
	if nb.left {
		label, class = label+" · left", class+" left"
	}
	if why != "" {
		label += " · " + why
	}
	d.bar(d.nodeLane(i), nb.from, at, class, label, nb.event)
	d.locks[i] = nil
	if why != "" && !slices.ContainsFunc(d.locks, func(x *nodeBar) bool { return x != nil && x.buyer == nb.buyer }) {
		if from, ok := d.holds[nb.buyer]; ok {
			d.bar(d.buyerLane(nb.buyer), from, at, "hold", "", -1)
			delete(d.holds, nb.buyer)
		}
	}
}

// close ends, at end, whatever is still open when the play ends: a hold still held is drawn to
// the end (a stuck lock), and so is a wait that never ended.
func (d *playDrawing) close(end int64) {
	for o, from := range d.waits {
		d.bar(d.buyerLane(o[0]), from, end, "wait", "", -1)
	}
	for o, from := range d.insides {
		d.bar(d.buyerLane(o[0]), from, end, "in", "", -1)
	}
	for b, from := range d.frozen {
		d.bar(d.buyerLane(b), from, end, "frozen", "", -1)
	}
	for b, from := range d.cut {
		d.bar(d.buyerLane(b), from, end, "cut", "", -1)
	}
	for i := range d.locks {
		d.endNode(i, end, "")
	}
	for b, from := range d.holds {
		d.bar(d.buyerLane(b), from, end, "hold", "", -1)
	}
	// Maps are drawn in no order: sort the bars so that a page is the same for the same history.
	slices.SortStableFunc(d.p.Bars, func(x, y []any) int {
		return cmp.Or(cmp.Compare(x[0].(int), y[0].(int)), cmp.Compare(x[1].(int64), y[1].(int64)),
			cmp.Compare(x[2].(int64), y[2].(int64)), cmp.Compare(x[3].(string), y[3].(string)), cmp.Compare(x[4].(string), y[4].(string)))
	})
}

// stockLabel is the label of a stock command's mark on the inventory's lane: whose it is, and
// the fencing token it showed, if any: "b2", "b2·t5".
func stockLabel(e referee.Event) string {
	if e.Token == 0 {
		return fmt.Sprintf("b%d", e.Buyer)
	}
	return fmt.Sprintf("b%d·t%d", e.Buyer, e.Token)
}
