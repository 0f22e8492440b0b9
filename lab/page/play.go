package page

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
// lanes of bars and marks by picture.Fold, the fold the terminal draws from too (page.go holds
// what the page shows around it).

// µs is d in whole microseconds.
func µs(d time.Duration) int64 { return d.Microseconds() }

// playDrawing builds one play's timeline from the referee's events.
type playDrawing struct {
	p      *Play
	tb     *Tables
	fold   *picture.Fold
	buyers int
	nodes  int
	last   map[[2]int]int // lane, style → its latest mark
	kept   []int          // the fold's event number → its index among the events kept, -1 if thinned
}

// NewPlay replays h through the referee and draws what it emits, its words and styles in tb.
func NewPlay(h *history.History, tb *Tables) Play {
	var evs []referee.Event
	ref := referee.NewReferee(*h, func(e referee.Event) { evs = append(evs, e) })
	for _, rec := range h.Records {
		ref.Add(rec)
	}
	d := &playDrawing{p: &Play{TTL: µs(h.Timing.TTL), Bars: [][]any{}}, tb: tb,
		nodes: max(len(h.Nodes), 1), last: map[[2]int]int{}}
	d.fold = picture.NewFold(d.nodes, h.NoLock) // a step that takes no lock: its orders work from the start
	for _, e := range evs {
		d.buyers = max(d.buyers, e.Buyer, e.Other)
		d.p.End = max(d.p.End, µs(e.At), µs(e.To))
	}
	if len(h.Records) > 0 {
		d.p.End = max(d.p.End, µs(h.Records[len(h.Records)-1].At))
	}
	d.p.End = max(d.p.End, 1)
	for n := 1; n <= d.buyers; n++ {
		d.p.Lanes = append(d.p.Lanes, Lane{Name: fmt.Sprintf("buyer %d", n), Kind: "buyer"})
	}
	for i := range d.nodes {
		name := "lock"
		if i < len(h.Nodes) && len(h.Nodes) > 1 {
			name = h.Nodes[i]
		}
		d.p.Lanes = append(d.p.Lanes, Lane{Name: name, Kind: "node"})
	}
	d.p.Lanes = append(d.p.Lanes, Lane{Name: "inventory", Kind: "inventory"})
	for _, e := range evs {
		d.event(e)
	}
	d.fold.Advance(time.Duration(d.p.End) * time.Microsecond)
	d.bars()
	return *d.p
}

// lane is the page's lane of the fold's lane l (-1: the ruler, or no lane the page draws).
func (d *playDrawing) lane(l int) int {
	switch i, node := picture.NodeOf(l); {
	case l == picture.Inventory:
		return d.buyers + d.nodes
	case node:
		return d.buyers + min(max(i, 0), d.nodes-1)
	case l > 0:
		return l - 1
	}
	return -1 // the ruler, and the Owner lane: the page draws each node's holds instead
}

// mark draws event i as mark m, or counts it into its lane's latest mark of the same style when
// that one is less than markSpan of the play away.
func (d *playDrawing) mark(i int, m picture.Drawn) int {
	lane, at := d.lane(m.Lane), µs(m.At)
	key := [2]int{lane, d.tb.styleOf(Style{picture.Marks[m.ID].Class, m.Glyph(), m.Label})}
	if k, ok := d.last[key]; ok {
		if prev := &d.p.Marks[k]; float64(at-prev.At) < markSpan*float64(d.p.End) {
			prev.Count++
			return k
		}
	}
	d.p.Marks = append(d.p.Marks, Mark{Lane: lane, At: at, Style: key[1], First: i, Count: 1})
	d.last[key] = len(d.p.Marks) - 1
	return len(d.p.Marks) - 1
}

// event folds one of the referee's events in, in its order, and draws its marks. A command that
// falls on the mark of the commands before it is counted there and not kept for ←/→ (Thinned):
// in a load run in virtual time a spinning waiter sends tens of thousands, as the terminal lab's
// feed drops them past its limit. Every other event is kept.
func (d *playDrawing) event(e referee.Event) {
	i := len(d.p.Events) // its index among the events kept
	lane, m := -1, -1
	if e.Buyer > 0 {
		lane = d.lane(e.Buyer)
	}
	if e.Kind == referee.EvOverlap {
		d.p.Overlaps++
	}
	for k, dr := range d.fold.Add(e) {
		mk := d.mark(i, dr)
		if k == 0 {
			lane, m = d.lane(dr.Lane), mk
		}
	}
	if e.Kind == referee.EvCommand && m >= 0 && d.p.Marks[m].Count > 1 {
		d.p.Thinned++
		d.kept = append(d.kept, -1)
		return
	}
	d.kept = append(d.kept, i)
	d.p.Events = append(d.p.Events, Event{At: µs(e.At), Lane: lane, Word: d.tb.wordOf(e.Words()), Mark: m})
}

// bars draws the fold's stretches as bars: a buyer's as its kind's class, a node's hold in its
// holder's colour, labelled with whose it is and, for what an ended hold left there, "· left".
// They are sorted, so that a page is the same for the same history.
func (d *playDrawing) bars() {
	spans := d.fold.Spans(0)
	slices.SortStableFunc(spans, func(x, y picture.Span) int { return cmp.Compare(x.From, y.From) })
	holds := map[int]int{} // lane → its holds so far: two side by side take the two shades
	for _, s := range spans {
		lane := d.lane(s.Lane)
		if lane < 0 {
			continue
		}
		class, label, event := s.Kind.Class(), "", -1
		if s.Event >= 0 && s.Event < len(d.kept) && (s.Kind == picture.Held || s.Kind == picture.Overlap || s.Kind == picture.Dead) {
			event = d.kept[s.Event]
		}
		if s.Kind == picture.Held {
			label, class = fmt.Sprintf("b%d", s.Holder), fmt.Sprintf("lock own%d", holds[lane]%2+1)
			holds[lane]++
			if s.Left {
				label, class = label+" · left", class+" left"
			}
			if s.Why != "" {
				label += " · " + s.Why
			}
		}
		d.p.Bars = append(d.p.Bars, []any{lane, µs(s.From), max(µs(s.To), µs(s.From)), class, label, event})
	}
	slices.SortStableFunc(d.p.Bars, func(x, y []any) int {
		return cmp.Or(cmp.Compare(x[0].(int), y[0].(int)), cmp.Compare(x[1].(int64), y[1].(int64)),
			cmp.Compare(x[2].(int64), y[2].(int64)), cmp.Compare(x[3].(string), y[3].(string)), cmp.Compare(x[4].(string), y[4].(string)))
	})
}
