package page

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
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

// Data is what a page's script draws.
type Data struct {
	Kind string `json:"kind"` // "run", "matrix", "grade" or "class"
	Runs []Run  `json:"runs"`
	// Words and Styles are the page's tables: every event's words, and every mark's class,
	// glyph and label, once each (a matrix's runs say "buyer 1 starts an order" hundreds of
	// times).
	Words     []string `json:"words"`
	Styles    []Style  `json:"styles"`
	Scenarios []string `json:"-"`
	Rows      []Row    `json:"-"`
	Like      string   `json:"-"` // grade: which step the learner's row is (grading.Like)
	Shared    []string `json:"-"` // grade: the learner's package-level state, a line each (grading.Shared)
	// Target, WayOn and Explored are what a grade says after its row, in the terminal's words:
	// whether the row is the one -want aimed for, the way on under each scenario that broke it,
	// and what exploring the lock found ("" or nil when not asked or not found). On a class's
	// page, Target says the room's target.
	Target   string   `json:"-"`
	WayOn    []string `json:"-"`
	Explored string   `json:"-"`
	Title    string   `json:"-"`
	Backend  string   `json:"-"`
	Played   string   `json:"-"`
}

// Row is one row of a page's table: a step's played cells, or (on a grade's page) a step's
// expected row beside the learner's.
type Row struct {
	Step  string
	Title string
	Note  string // grade: what the row is to the learner's
	Mine  bool   // grade: the learner's own row
	Met   string // class: "met" or "not met" where the learner aimed for a target (-want), else ""
	Cells []Cell
}

// Cell is one cell of a page's table.
type Cell struct {
	Text    string // as the matrix prints it (cellText)
	Class   string // ok, bad, unknown, skipped
	Run     string // the id of its run's section, "" for a cell with no run here
	Hint    string // on hover: the first sentence of the referee, or why it was skipped
	Differs bool   // grade: a step's expected cell that is not the learner's
}

// Run is one run (one cell): its verdict in the terminal's words and its plays' timelines.
type Run struct {
	ID       string            `json:"id"`
	Step     string            `json:"-"`
	Title    string            `json:"-"` // the step's title, from the catalog
	Scenario string            `json:"-"`
	What     string            `json:"-"` // scenario.Describe, or the history's own (an explored program's)
	Story    []string          `json:"-"` // an explored program in words, a line a buyer (explore.Found.Lines)
	Seed     uint64            `json:"-"` // an explored program: the seed that found it
	Replay   string            `json:"-"` // an explored program: the command that finds and shrinks it again
	Backend  string            `json:"-"`
	Played   string            `json:"-"`
	Said     course.Said       `json:"-"` // the verdict, as the terminal says it
	Explain  []referee.Finding `json:"-"`
	Report   string            `json:"-"` // Report.Text(): what lab run prints
	Lesson   string            `json:"-"`
	Next     string            `json:"-"`
	FixAt    string            `json:"-"` // the folder of the step that fixes it
	Plays    []Play            `json:"plays"`
}

// Play is one play's timeline. Times are microseconds from the start of the play. A bar is
// [lane, from, to, class, label, event] (event: the index of the event it shows, -1 none). Marks
// and events go to the page flat, each number after the first of its kind as the difference from
// the one before where that keeps it short (MarshalJSON): a load run has thousands.
type Play struct {
	Label    string  `json:"label,omitempty"`
	End      int64   `json:"end"`
	TTL      int64   `json:"ttl"`
	Lanes    []Lane  `json:"lanes"`
	Bars     [][]any `json:"bars"`
	Marks    []Mark  `json:"-"`
	Events   []Event `json:"-"`
	Overlaps int     `json:"overlaps"`
	// Thinned is how many commands are counted on their marks and not kept among Events.
	Thinned int `json:"thinned,omitempty"`
}

// Mark is one mark of a timeline: a command, a stock read or write, a lock's coming or going,
// a fault — one event, or Count events of one lane and style that fall on one spot.
type Mark struct {
	Lane  int // -1: the ruler (a violation)
	At    int64
	Style int // the page's Styles
	First int // the first event it draws
	Count int
}

// Event is one of the referee's events, in its order: when, the lane it happened on (-1
// none), its words (the page's Words) and its mark (-1 none).
type Event struct {
	At   int64
	Lane int
	Word int
	Mark int
}

// Style is how a mark looks: its class (what it is), its glyph and its label.
type Style [3]string

// MarshalJSON writes the marks as [lane, Δat, style, Δfirst, count, …] and the events as
// [Δat, lane, word, mark, …], each Δ from the mark's or event's before (page.js undoes it).
func (p Play) MarshalJSON() ([]byte, error) {
	type plain Play
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

// Tables gather a page's words and styles as its plays are drawn.
type Tables struct {
	Words  []string // every event's words, once each
	Styles []Style  // every mark's class, glyph and label, once each
	word   map[string]int
	style  map[Style]int
}

// NewTables is an empty pair of tables.
func NewTables() *Tables {
	return &Tables{Words: []string{}, Styles: []Style{}, word: map[string]int{}, style: map[Style]int{}}
}

// wordOf is s's index in the page's words.
func (t *Tables) wordOf(s string) int { return indexIn(&t.Words, t.word, s) }

// styleOf is st's index in the page's styles.
func (t *Tables) styleOf(st Style) int { return indexIn(&t.Styles, t.style, st) }

// indexIn is v's index in *list, whose indexes idx holds, v appended the first time.
func indexIn[V comparable](list *[]V, idx map[V]int, v V) int {
	i, ok := idx[v]
	if !ok {
		i = len(*list)
		idx[v] = i
		*list = append(*list, v)
	}
	return i
}

// Lane is one lane of a timeline: a buyer, a lock node, or the inventory.
type Lane struct {
	Name string `json:"name"`
	Kind string `json:"kind"` // "buyer", "node" or "inventory"
}

// markSpan is the share of a play's length within which marks of one lane, class and glyph are
// drawn as one (with a count): a spinning waiter sends thousands of commands in a load run, and
// the page draws a mark where the eye can see one. Every event is kept, and ←/→ walks them all.
const markSpan = 1.0 / 250

// cellOf is c as a cell of a page's table.
func cellOf(c matrix.Cell) Cell {
	pc := Cell{Text: course.CellText(c), Class: course.CellClass(c)}
	switch {
	case c.Skipped != "":
		pc.Hint = c.Skipped
	case len(c.Unjudged) > 0:
		pc.Hint = "no verdict on " + course.KindList(c.Unjudged) + ": " + c.Why
	case len(c.Explain) > 0:
		pc.Hint = c.Explain[0].Sentence
	}
	if c.Report != nil {
		pc.Run = RunID(c.Step, c.Scenario)
	}
	return pc
}

// RunID is the anchor of a run's section: "run-04_atomic_ttl-slow"; a learner's folder's
// slashes become dashes ("run-steps-mine-slow"), so that the link needs no escaping.
func RunID(step, sc string) string {
	return "run-" + strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == '#' || r == '%' || r == '"' {
			return '-'
		}
		return r
	}, step+"-"+sc)
}

// newRun is the page's view of cell c, played at played ("" unknown): c.Report's verdict and
// every play's timeline, its words and styles in tb. st is the cell's step when the catalog
// knows it; learner is the learner's lock in the catalog (lab -dir), nil if none.
func newRun(c matrix.Cell, st *steps.Step, played string, tb *Tables, learner *steps.Step) Run {
	rep := c.Report
	r := Run{ID: RunID(c.Step, c.Scenario), Step: c.Step, Scenario: c.Scenario, What: scenario.Describe(steps.Scenario(c.Scenario)),
		Backend: rep.Backend, Played: played, Said: course.SaidOf(rep), Explain: rep.Explain, Report: rep.Text()}
	if r.Backend == "" {
		r.Backend = "embedded"
	}
	if r.What == "" {
		r.What = rep.What
	}
	if st != nil {
		r.Title = st.Title
		// An explored program is no column of the matrix: no step's row says what clears it.
		if slices.Contains(catalog.Steps, st) && scenario.Find(steps.Scenario(c.Scenario)) != nil {
			r.Lesson, r.Next = course.Coda(catalog.Steps, st, steps.Scenario(c.Scenario), rep.Violations, learner)
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
		p := NewPlay(h, tb)
		if len(plays) > 1 {
			p.Label = fmt.Sprintf("play %d of %d", i+1, len(plays))
		}
		r.Plays = append(r.Plays, p)
	}
	return r
}
