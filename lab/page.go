package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// A run you can share: run, matrix, grade and judge write, with -html FILE, one self-contained
// page (pagehtml.go writes it and reads it back). This file is what the page shows, worked out in
// Go: each run's verdict as the terminal says it, and each play's timeline, drawn from the events
// the referee emits as it replays the history (referee.NewReferee) and said in their own words
// (Event.Words). The page's script only draws what is here; it judges nothing.

// pageData is what a page's script draws.
type pageData struct {
	Kind string    `json:"kind"` // "run", "matrix", "grade" or "class"
	Runs []pageRun `json:"runs"`
	// Words and Styles are the page's tables: every event's words, and every mark's class,
	// glyph and label, once each (a matrix's runs say "buyer 1 starts an order" hundreds of
	// times).
	Words     []string    `json:"words"`
	Styles    []pageStyle `json:"styles"`
	Scenarios []string    `json:"-"`
	Rows      []pageRow   `json:"-"`
	Like      string      `json:"-"` // grade: which step the learner's row is (grading.Like)
	Shared    []string    `json:"-"` // grade: the learner's package-level state, a line each (grading.Shared)
	Title     string      `json:"-"`
	Backend   string      `json:"-"`
	Played    string      `json:"-"`
}

// pageRow is one row of a page's table: a step's played cells, or (on a grade's page) a step's
// expected row beside the learner's.
type pageRow struct {
	Step  string
	Title string
	Note  string // grade: what the row is to the learner's
	Mine  bool   // grade: the learner's own row
	Cells []pageCell
}

// pageCell is one cell of a page's table.
type pageCell struct {
	Text    string // as the matrix prints it (cellText)
	Class   string // ok, bad, unknown, skipped
	Run     string // the id of its run's section, "" for a cell with no run here
	Hint    string // on hover: the first sentence of the referee, or why it was skipped
	Differs bool   // grade: a step's expected cell that is not the learner's
}

// pageRun is one run (one cell): its verdict in the terminal's words and its plays' timelines.
type pageRun struct {
	ID       string            `json:"id"`
	Step     string            `json:"-"`
	Title    string            `json:"-"` // the step's title, from the catalog
	Scenario string            `json:"-"`
	What     string            `json:"-"` // scenario.Describe, or the history's own (an explored program's)
	Story    []string          `json:"-"` // an explored program in words, a line a buyer (explore.Found.Lines)
	Backend  string            `json:"-"`
	Played   string            `json:"-"`
	Cell     string            `json:"-"` // cellText
	Class    string            `json:"-"`
	Mark     string            `json:"-"` // ✓, ✗ or ?
	Explain  []referee.Finding `json:"-"`
	Report   string            `json:"-"` // Report.Text(): what lab run prints
	Lesson   string            `json:"-"`
	Next     string            `json:"-"`
	FixAt    string            `json:"-"` // the folder of the step that fixes it
	Plays    []pagePlay        `json:"plays"`
}

// pagePlay is one play's timeline. Times are microseconds from the start of the play. A bar is
// [lane, from, to, class, label, event] (event: the index of the event it shows, -1 none). Marks
// and events go to the page flat, each number after the first of its kind as the difference from
// the one before where that keeps it short (MarshalJSON): a load run has thousands.
type pagePlay struct {
	Label    string      `json:"label,omitempty"`
	End      int64       `json:"end"`
	TTL      int64       `json:"ttl"`
	Lanes    []pageLane  `json:"lanes"`
	Bars     [][]any     `json:"bars"`
	Marks    []pageMark  `json:"-"`
	Events   []pageEvent `json:"-"`
	Overlaps int         `json:"overlaps"`
	// Thinned is how many commands are counted on their marks and not kept among Events.
	Thinned int `json:"thinned,omitempty"`
}

// pageMark is one mark of a timeline: a command, a stock read or write, a lock's coming or going,
// a fault — one event, or Count events of one lane and style that fall on one spot.
type pageMark struct {
	Lane  int // -1: the ruler (a violation)
	At    int64
	Style int // the page's Styles
	First int // the first event it draws
	Count int
}

// pageEvent is one of the referee's events, in its order: when, the lane it happened on (-1
// none), its words (the page's Words) and its mark (-1 none).
type pageEvent struct {
	At   int64
	Lane int
	Word int
	Mark int
}

// pageStyle is how a mark looks: its class (what it is), its glyph and its label.
type pageStyle [3]string

// MarshalJSON writes the marks as [lane, Δat, style, Δfirst, count, …] and the events as
// [Δat, lane, word, mark, …], each Δ from the mark's or event's before (page.js undoes it).
func (p pagePlay) MarshalJSON() ([]byte, error) {
	type plain pagePlay
	marks := make([]int64, 0, 5*len(p.Marks))
	var at, first int64
	for _, m := range p.Marks {
		marks = append(marks, int64(m.Lane), m.At-at, int64(m.Style), int64(m.First)-first, int64(m.Count))
		at, first = m.At, int64(m.First)
	}
	events := make([]int64, 0, 4*len(p.Events))
	at = 0
	for _, e := range p.Events {
		events = append(events, e.At-at, int64(e.Lane), int64(e.Word), int64(e.Mark))
		at = e.At
	}
	return json.Marshal(struct {
		plain
		Marks  []int64 `json:"marks"`
		Events []int64 `json:"events"`
	}{plain(p), marks, events})
}

// pageTables gather a page's words and styles as its plays are drawn.
type pageTables struct {
	words  []string
	styles []pageStyle
	word   map[string]int
	style  map[pageStyle]int
}

func newPageTables() *pageTables {
	return &pageTables{words: []string{}, styles: []pageStyle{}, word: map[string]int{}, style: map[pageStyle]int{}}
}

// wordOf is s's index in the page's words.
func (t *pageTables) wordOf(s string) int {
	i, ok := t.word[s]
	if !ok {
		i = len(t.words)
		t.word[s] = i
		t.words = append(t.words, s)
	}
	return i
}

// styleOf is st's index in the page's styles.
func (t *pageTables) styleOf(st pageStyle) int {
	i, ok := t.style[st]
	if !ok {
		i = len(t.styles)
		t.style[st] = i
		t.styles = append(t.styles, st)
	}
	return i
}

// pageLane is one lane of a timeline: a buyer, a lock node, or the inventory.
type pageLane struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "buyer", "node" or "inventory"
}

// markSpan is the share of a play's length within which marks of one lane, class and glyph are
// drawn as one (with a count): a spinning waiter sends thousands of commands in a load run, and
// the page draws a mark where the eye can see one. Every event is kept, and ←/→ walks them all.
const markSpan = 1.0 / 250

// pageCellOf is c as a cell of a page's table.
func pageCellOf(c cell) pageCell {
	pc := pageCell{Text: cellText(c), Class: cellClass(c)}
	switch {
	case c.Skipped != "":
		pc.Hint = c.Skipped
	case len(c.Unjudged) > 0:
		pc.Hint = "no verdict on " + joinKinds(c.Unjudged) + ": " + c.Why
	case len(c.Explain) > 0:
		pc.Hint = c.Explain[0].Sentence
	}
	if c.Report != nil {
		pc.Run = runID(c.Step, c.Scenario)
	}
	return pc
}

// cellClass is how a cell is coloured: ok (✓), bad (a violation), unknown (?), skipped.
func cellClass(c cell) string {
	switch {
	case c.Skipped != "":
		return "skipped"
	case len(c.Unjudged) > 0:
		return "unknown"
	case len(c.Violations) > 0:
		return "bad"
	}
	return "ok"
}

// runID is the anchor of a run's section: "run-04_atomic_ttl-slow"; a learner's folder's
// slashes become dashes ("run-steps-mine-slow"), so that the link needs no escaping.
func runID(step, sc string) string {
	return "run-" + strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == '#' || r == '%' || r == '"' {
			return '-'
		}
		return r
	}, step+"-"+sc)
}

// newPageRun is the page's view of cell c, played at played ("" unknown): c.Report's verdict and
// every play's timeline, its words and styles in tb. st is the cell's step when the catalog
// knows it.
func newPageRun(c cell, st *steps.Step, played string, tb *pageTables) pageRun {
	rep := c.Report
	r := pageRun{ID: runID(c.Step, c.Scenario), Step: c.Step, Scenario: c.Scenario, What: scenario.Describe(steps.Scenario(c.Scenario)),
		Backend: rep.Backend, Played: played, Cell: cellText(c), Class: cellClass(c), Explain: rep.Explain, Report: rep.Text()}
	if r.Backend == "" {
		r.Backend = "embedded"
	}
	if r.What == "" {
		r.What = rep.What
	}
	r.Mark = map[string]string{"ok": "✓", "bad": "✗", "unknown": "?"}[r.Class]
	if st != nil {
		r.Title = st.Title
		// An explored program is no column of the matrix: no step's row says what clears it.
		if slices.Contains(catalog.Steps, st) && scenario.Find(steps.Scenario(c.Scenario)) != nil {
			r.Lesson, r.Next = coda(st, steps.Scenario(c.Scenario), rep.Violations)
			if r.Next != "" {
				if h := course.NewHandoff(catalog.Steps, slices.Index(catalog.Steps, st), steps.Scenario(c.Scenario), rep.Violations, learner); h.Fix >= 0 {
					r.FixAt = "steps/" + catalog.Steps[h.Fix].Slug
				}
			}
		}
	}
	plays := []*history.History{}
	if rep.History != nil {
		plays = append(plays, rep.History)
	}
	plays = append(plays, rep.Others...)
	for i, h := range plays {
		p := newPagePlay(h, tb)
		if len(plays) > 1 {
			p.Label = fmt.Sprintf("play %d of %d", i+1, len(plays))
		}
		r.Plays = append(r.Plays, p)
	}
	return r
}

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

// mark draws event i as a mark on lane at at, or counts it into the lane's latest mark of the
// same class and glyph when that one is less than markSpan of the play away.
func (d *playDrawing) mark(i, lane int, at int64, class, glyph, label string) int {
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
		if e.Cmd != nil && e.Buyer > 0 {
			class := "cmd"
			if e.Cmd.Stock {
				class = "scmd"
			}
			m = d.mark(i, lane, at, class, commandGlyph(e.Cmd), "")
		}
	case referee.EvEnter:
		d.endWait(order, at)
		if _, in := d.insides[order]; !in {
			d.insides[order] = at
		}
		lane = d.stockLane()
		m = d.mark(i, lane, at, "read", fmt.Sprint(e.Stock), stockLabel(e))
	case referee.EvWrite:
		lane = d.stockLane()
		m = d.mark(i, lane, at, "write", fmt.Sprint(e.Stock), stockLabel(e))
	case referee.EvFenced:
		lane = d.stockLane()
		m = d.mark(i, lane, at, "fenced", "✗", stockLabel(e))
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
			m = d.mark(i, lane, at, "done", "✓", "")
		case e.Err != "":
			m = d.mark(i, lane, at, "failed", "✗", "")
		default:
			m = d.mark(i, lane, at, "done", "–", "")
		}
	case referee.EvRejected:
		m = d.mark(i, lane, at, "rejected", "✗", "")
	case referee.EvRefused:
		m = d.mark(i, lane, at, "refused", "n", "")
	case referee.EvWaiting:
		m = d.mark(i, lane, at, "waiting", "w", "")
	case referee.EvOverlap:
		d.p.Overlaps++
		for _, b := range []int{e.Buyer, e.Other} {
			if b > 0 {
				d.bar(d.buyerLane(b), µs(e.From), µs(e.To), "over", "", i)
			}
		}
	case referee.EvFault:
		m = d.mark(i, lane, at, "fault", "⚡", string(e.Fault))
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
		m = d.mark(i, lane, at, "crash", "✖", "")
	case referee.EvReentry:
		if e.OK {
			m = d.mark(i, lane, at, "reentry", "r", "")
		} else {
			m = d.mark(i, lane, at, "failed", "r", "")
		}
	case referee.EvViolation:
		lane = -1
		m = d.mark(i, -1, at, "viol", "!", "")
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
		m = d.mark(i, lane, at, "acquired", "+", "")
	case referee.EvReleased:
		lane = d.nodeLane(e.Node)
		d.endHold(e.Buyer, lane-d.buyers, at, e.Left)
		m = d.mark(i, lane, at, "released", "✓", "")
	case referee.EvForeign:
		lane = d.nodeLane(e.Node)
		d.endHold(e.Other, lane-d.buyers, at, e.Left)
		class := "foreign"
		if e.Left { // no hold ended here, and no violation
			class = "left"
		}
		m = d.mark(i, lane, at, class, "!", fmt.Sprintf("b%d", e.Buyer))
	case referee.EvExpired:
		lane = d.nodeLane(e.Node)
		when := at
		if e.Due > 0 && e.Due <= e.At {
			when = µs(e.Due)
		}
		if e.Other > 0 {
			d.endHold(e.Other, lane-d.buyers, when, e.Left)
		}
		m = d.mark(i, lane, when, "expired", "x", "")
	case referee.EvLost:
		lane = d.nodeLane(e.Node)
		d.endHold(e.Other, lane-d.buyers, at, e.Left)
		m = d.mark(i, lane, at, "lost", "?", "")
	case referee.EvFailover:
		lane = d.nodeLane(e.Node)
		m = d.mark(i, lane, at, "node", "F", "")
	case referee.EvRestart:
		lane = d.nodeLane(e.Node)
		m = d.mark(i, lane, at, "node", "R", "")
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

// commandGlyph is a command's mark: G and S for the stock's GET and SET, N for a SET NX (a try
// for the lock), L for a Lua script, D for DEL, P for a PEXPIRE, else its first letter.
func commandGlyph(c *referee.Command) string {
	switch {
	case c.Stock && c.Name == "GET":
		return "G"
	case c.Stock:
		return "S"
	case c.NX:
		return "N"
	case strings.HasPrefix(c.Name, "EVAL"), strings.HasPrefix(c.Name, "FCALL"):
		return "L"
	case c.Name == "PEXPIRE", c.Name == "EXPIRE":
		return "P"
	case c.Name == "":
		return "·"
	}
	return c.Name[:1]
}

// stockLabel is the label of a stock command's mark on the inventory's lane: whose it is, and
// the fencing token it showed, if any: "b2", "b2·t5".
func stockLabel(e referee.Event) string {
	if e.Token == 0 {
		return fmt.Sprintf("b%d", e.Buyer)
	}
	return fmt.Sprintf("b%d·t%d", e.Buyer, e.Token)
}
