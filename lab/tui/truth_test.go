package tui

import (
	"bytes"
	"html"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/lab/picture"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// Every screen tells the truth: a step's break, as the b key shows it in the terminal and as the
// page -html writes shows it, says one verdict, flags the same kinds, draws the same marks, and
// shows the step's own idea (steps.Step.Shows).

// playBreak plays st's break (its BreakWith scenario) in virtual time, as b plays it.
func playBreak(t *testing.T, st *steps.Step) *referee.Report { return playCell(t, st, st.BreakWith) }

// playCell plays sc against st in virtual time.
func playCell(t *testing.T, st *steps.Step, sc steps.Scenario) *referee.Report {
	t.Helper()
	rep, err := matrix.Play(st, sc, "", func(f func()) { synctest.Test(t, func(*testing.T) { f() }) })
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// breakScreen is the terminal lab's arena at w×h after st's break, played as rep: the events of
// its history as the lab's session receives them, then its report.
func breakScreen(t *testing.T, st *steps.Step, rep *referee.Report, w, h int) string {
	t.Helper()
	m := newModel(Options{offline: true})
	defer m.shutdown()
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.cur, m.scr, m.slow = slices.Index(m.steps, st), scrArena, 1
	m.prepareArena(rep.History.Scenario, history.DefaultTiming(), -1)
	m.ar.play = rep.History.Play
	ref := referee.NewReferee(*rep.History, m.ar.apply)
	for _, rec := range rep.History.Records {
		ref.Add(rec)
	}
	m.finishBreak(rep, nil)
	return m.View()
}

// breakPage is the page of rep's run, as lab run -html writes it, and its data.
func breakPage(t *testing.T, st *steps.Step, rep *referee.Report) (string, page.Data) {
	t.Helper()
	d := page.RunPage(matrix.CellOf(rep), st, "", nil)
	var b bytes.Buffer
	if err := page.WriteTo(&b, d, nil, page.PlainRunsLimit); err != nil {
		t.Fatal(err)
	}
	return b.String(), d
}

// timelineRows are the cells of the timeline's lanes on screen, each lane's label and status cut
// off, with the label.
func timelineRows(screen string, w int) map[string]string {
	rows := map[string]string{}
	lines := strings.Split(screen, "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "time ") })
	label := regexp.MustCompile(`^(lock|b\d+| @\d+) *$`)
	for _, l := range lines[at+1:] {
		r := []rune(l)
		if len(r) < labelW || !label.MatchString(string(r[:labelW])) {
			break
		}
		end := min(len(r), w-statusW)
		rows[strings.TrimSpace(string(r[:labelW]))] = string(r[labelW:end])
	}
	return rows
}

// termMarks are the marks the terminal drew on its lanes.
func termMarksOn(rows map[string]string) map[picture.ID]bool {
	out := map[picture.ID]bool{}
	for _, cells := range rows {
		for _, r := range cells {
			for id, m := range picture.Marks {
				if m.Term && m.Glyph == r {
					out[picture.ID(id)] = true
				}
			}
		}
	}
	return out
}

// pageMarks are the marks the page draws that the terminal draws too, by ID, and the kinds its
// ruler flags red (a violation's mark).
func pageMarks(d page.Data) (marks map[picture.ID]bool, flagged []steps.Kind) {
	marks = map[picture.ID]bool{}
	viol := regexp.MustCompile(`^(?:VIOLATION|also seen \(not judged by [^)]*\)) ([a-z-]+):`)
	for _, p := range d.Runs[0].Plays {
		for _, m := range p.Marks {
			st := d.Styles[m.Style]
			for id, mk := range picture.Marks {
				if mk.Term && mk.Class == st[0] && string(mk.Glyph) == st[1] {
					marks[picture.ID(id)] = true
				}
			}
		}
		for _, e := range p.Events {
			if e.Mark < 0 || d.Styles[p.Marks[e.Mark].Style][0] != picture.Marks[picture.Violation].Class {
				continue
			}
			k := viol.FindStringSubmatch(d.Words[e.Word])
			if k == nil {
				continue // a violation's mark counts the overlaps beside it
			}
			if !slices.Contains(flagged, steps.Kind(k[1])) {
				flagged = append(flagged, steps.Kind(k[1]))
			}
		}
	}
	return marks, flagged
}

var (
	pageVerdict = regexp.MustCompile(`<p class="cell">verdict: <b>([^<]*)</b></p>(?:<p class="also">([^<]*)</p>)?`)
	termFlag    = regexp.MustCompile(`✗ ([a-z-]+)`)
)

// TestEveryBreakSaysOneThing: for every step's break, the page and the terminal say the same
// verdict line (a passing run one ✓), flag the same kinds (no kind the scenario does not judge),
// and the terminal draws no mark the page does not; the step's idea is on its b screen at 80×24
// and on its page.
func TestEveryBreakSaysOneThing(t *testing.T) {
	type cell struct {
		st *steps.Step
		sc steps.Scenario
	}
	var cells []cell
	for _, st := range catalog.Steps {
		if st.BreakWith != "" {
			cells = append(cells, cell{st, st.BreakWith})
		}
	}
	naive, _ := catalog.Find("01")
	cells = append(cells, cell{naive, steps.Error}) // ✓, with overlap and oversold seen and not judged
	for _, c := range cells {
		st := c.st
		t.Run(st.Slug+"×"+string(c.sc), func(t *testing.T) {
			rep := playCell(t, st, c.sc)
			doc, d := breakPage(t, st, rep)
			screen := breakScreen(t, st, rep, 80, 24)
			flat := strings.Join(strings.Fields(screen), " ")

			m := pageVerdict.FindStringSubmatch(doc)
			if m == nil {
				t.Fatalf("the page has no verdict line")
			}
			said := course.SaidOf(rep)
			line, also := html.UnescapeString(m[1]), html.UnescapeString(m[2])
			if line != said.Line || also != said.AlsoLine || strings.Contains(doc, "✓ ✓") {
				t.Errorf("the page says %q / %q, the report %q / %q", line, also, said.Line, said.AlsoLine)
			}
			want := "INVARIANTS " + line
			if also != "" {
				want += " · " + also
			}
			if !strings.Contains(flat, want) {
				t.Errorf("the terminal does not say the page's verdict %q:\n%s", want, screen)
			}

			_, inv, _ := strings.Cut(flat, "INVARIANTS ")
			inv, _, _ = strings.Cut(inv, "first violation")
			var termFlags []steps.Kind
			for _, f := range termFlag.FindAllStringSubmatch(inv, -1) {
				termFlags = append(termFlags, steps.Kind(f[1]))
			}
			pm, flagged := pageMarks(d)
			slices.Sort(termFlags)
			slices.Sort(flagged)
			viols := slices.Sorted(slices.Values(rep.Violations))
			// the ruler flags a violation where the referee found it; stuck and idle are judged
			// when the run ends, and only the verdict says them
			if !slices.Equal(termFlags, viols) || slices.ContainsFunc(flagged, func(k steps.Kind) bool { return !slices.Contains(termFlags, k) }) {
				t.Errorf("flagged: terminal %v, page's ruler %v; the verdict's violations %v", termFlags, flagged, viols)
			}
			if len(rep.Violations) == 0 && (len(flagged) > 0 || strings.Contains(doc, "VIOLATION")) {
				t.Errorf("a run with no violation: the page flags %v, or says VIOLATION", flagged)
			}
			if strings.Contains(doc, "VIOLATION") {
				for _, k := range rep.AlsoSeen() {
					if slices.ContainsFunc(d.Words, func(w string) bool { return strings.HasPrefix(w, "VIOLATION "+string(k)) }) {
						t.Errorf("the page calls %s, which %s does not judge, a VIOLATION", k, rep.Scenario)
					}
				}
			}

			rows := timelineRows(screen, 80)
			for id := range termMarksOn(rows) {
				if !pm[id] {
					t.Errorf("the terminal draws %s, the page does not", id.Glyph())
				}
			}
			if len(rows) == 0 {
				t.Fatalf("no timeline on the b screen:\n%s", screen)
			}
			if c.sc == st.BreakWith {
				checkIdea(t, st, rows, d)
			}
		})
	}
}

// checkIdea: st's idea (picture.Ideas[st.Shows]) is on its b screen's lanes and on its page.
func checkIdea(t *testing.T, st *steps.Step, rows map[string]string, d page.Data) {
	t.Helper()
	idea, ok := picture.Ideas[st.Shows]
	if !ok {
		t.Fatalf("%s shows %q, which picture.Ideas does not name", st.Slug, st.Shows)
	}
	onScreen, onPage := false, false
	for label, cells := range rows {
		switch {
		case idea.Nodes:
			onScreen = onScreen || strings.HasPrefix(label, "@")
		case idea.Spins:
			onScreen = onScreen || (label != "lock" && strings.ContainsRune(cells, '~'))
		case idea.Lane && idea.Kind == picture.Held:
			onScreen = onScreen || (label == "lock" && strings.ContainsRune(cells, '═'))
		case idea.Lane:
			onScreen = onScreen || (label != "lock" && strings.ContainsRune(cells, glyph[picture.StateOf(1<<idea.Kind)]))
		default:
			onScreen = onScreen || strings.ContainsRune(cells, picture.Marks[idea.Mark].Glyph)
		}
	}
	for _, p := range d.Runs[0].Plays {
		nodes := 0
		for _, l := range p.Lanes {
			if l.Kind == "node" {
				nodes++
			}
		}
		for _, b := range p.Bars {
			if idea.Lane && strings.Fields(b[3].(string))[0] == idea.Kind.Class() {
				onPage = true
			}
		}
		for _, m := range p.Marks {
			st := d.Styles[m.Style]
			switch {
			case idea.Spins:
				onPage = onPage || (st[1] == picture.Try.Glyph() && m.Count > 1 && m.Lane < len(p.Lanes)-nodes-1)
			case !idea.Lane && !idea.Nodes:
				onPage = onPage || (st[0] == picture.Marks[idea.Mark].Class && st[1] == idea.Mark.Glyph())
			}
		}
		onPage = onPage || (idea.Nodes && nodes > 1)
	}
	if !onScreen {
		t.Errorf("%s's idea (%s) is not on its b screen at 80×24:\n%s", st.Slug, st.Shows, strings.Join(slices.Collect(maps.Values(rows)), "\n"))
	}
	if !onPage {
		t.Errorf("%s's idea (%s) is not on its page", st.Slug, st.Shows)
	}
}
