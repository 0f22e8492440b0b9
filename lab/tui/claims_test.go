package tui

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/picture"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The claims the curriculum and the handout make about the terminal lab, which no command prints:
// which key opens what, what fits on which screen, what the legend names, how long a key's move
// lasts. Each is quoted from its file as written (a changed sentence fails here until its check
// follows) and held to the lab itself.

// docClaim is one sentence of a document and what in the lab bears it out.
type docClaim struct {
	file, quote string
	check       func(t *testing.T)
}

// TestScreenClaims holds each claim to the lab.
func TestScreenClaims(t *testing.T) {
	for _, c := range []docClaim{
		{"docs/curriculum.md", "in the lab, `5` opens 5's diff and `8` the watchdog's (`→` opens the GETSET side road, which sits between steps 4 and 5)", checkHandoffKeys},
		{"docs/handout.md", "`tab` shows a step's diff from the step it grew from, `d` its whole source", checkTabOpensTheDiff},
		{"docs/handout.md", "| `tab` or `c`, then `d` | the step's diff from the step it grew from; `d` toggles its whole source |", checkTabOpensTheDiff},
		{"docs/curriculum.md", "every buyer's lane comes first (ten fit while nobody broke anything; the line under them names any buyer it cannot fit), then a line or two of the LOG; the legend shrinks to one line with five buyers and goes with ten, and after a break the lesson and the hand-off take its room.", checkAt80x24},
		{"docs/curriculum.md", "At 100 × 30 the arena shows the lanes of five buyers, the whole legend", checkAt100x30},
		{"docs/handout.md", "the legend under it names every glyph and mark the step can draw when the screen has room (at 100 × 30, five buyers and the legend fit", checkLegendNamesEveryMark},
		{"README.md", "(at most 6 × TTL; 4 × for unlock-race)", checkMoveCaps},
		{"docs/curriculum.md", "press `f` on the live buyers: new orders wait until the ones under way are done", checkFailoverWaits},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), c.quote) {
			t.Errorf("%s no longer says %q: hold what it says now to the lab here", c.file, c.quote)
			continue
		}
		t.Run(c.file+": "+c.quote[:min(len(c.quote), 40)], c.check)
	}
}

// checkHandoffKeys: after step 4 breaks under slow, 5 opens step 5's diff and 8 step 8's; → from
// step 4 is the GETSET side road.
func checkHandoffKeys(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	loadRecorded(t, m)
	five := course.ByNumber(m.steps, 5)
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "5 step 5") || !strings.Contains(v, "8 step 8: the fix") {
		t.Errorf("after 04's break the footer does not offer 5 and 8:\n%s", m.View())
	}
	press(m, "5")
	if m.cur != five || m.scr != scrCode || !m.code.diff {
		t.Errorf("5 after the break: step index %d, screen %d, diff %v", m.cur, m.scr, m.code.diff)
	}
	p := newModel(Options{offline: true})
	defer p.shutdown()
	p.setStep(course.ByNumber(p.steps, 4))
	press(p, "right")
	if p.step().Slug != "side_getset" {
		t.Errorf("→ from step 4 opens %s, not the GETSET side road", p.step().Slug)
	}
}

// checkTabOpensTheDiff: tab on step 4 shows its diff from step 3; d its whole source.
func checkTabOpensTheDiff(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	m.setStep(course.ByNumber(m.steps, 4))
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 30})
	press(m, "tab")
	if v := m.View(); m.scr != scrCode || !strings.Contains(v, "diff from step 3") {
		t.Errorf("tab does not show step 4's diff from step 3:\n%s", v)
	}
	press(m, "d")
	if v := m.View(); !strings.Contains(v, "source of step 4") {
		t.Errorf("d does not show step 4's whole source:\n%s", v)
	}
}

// arenaWith is step 4's live arena with n buyers, one inside, at w × h.
func arenaWith(t *testing.T, n, w, h int) string {
	return arenaOn(t, course.ByNumber(catalog.Steps, 4), n, w, h)
}

// arenaOn is step i's live arena with n buyers at w×h.
func arenaOn(t *testing.T, i, n, w, h int) string {
	m := liveArena(t, i)
	for b := 1; b <= n; b++ {
		m.ar.apply(referee.Event{At: time.Millisecond, Kind: referee.EvStart, Buyer: b})
	}
	m.ar.apply(referee.Event{At: 2 * time.Millisecond, Kind: referee.EvEnter, Buyer: 1, Stock: 100, Granted: true})
	// what a session shows a little later: a first violation of two lines, and on a quorum the
	// LOCK line per node
	m.ar.apply(referee.Event{At: 3 * time.Millisecond, Kind: referee.EvViolation, Viol: steps.Starved, Buyer: 3,
		Sentence: "buyer 3 waited inside Lock while buyers that asked after it got the lock 5 times, and more words to wrap"})
	if m.ar.multi() {
		nodes := make([]arena.LockState, len(m.ar.nodes))
		for i := range nodes {
			nodes[i] = arena.LockState{Held: true, Owner: 1, TTL: time.Second, Value: "x"}
		}
		m.ar.setLock(lockReading{st: nodes[0], nodes: nodes, at: 3 * time.Millisecond})
	}
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m.View()
}

// legendShown counts the lines of v that are lines of the legend at width w.
func legendShown(t *testing.T, v string, w int) (shown, all int) {
	return legendShownOn(t, course.ByNumber(catalog.Steps, 4), v, w)
}

// legendShownOn is legendShown on step i's arena.
func legendShownOn(t *testing.T, i int, v string, w int) (shown, all int) {
	m := liveArena(t, i)
	legend := legendLines(w, m.ar)
	for _, l := range legend {
		if strings.Contains(v, l) {
			shown++
		}
	}
	return shown, len(legend)
}

// lanesShown tells whether v draws a lane for each of buyers 1…n.
func lanesShown(v string, n int) bool {
	for b := 1; b <= n; b++ {
		if !regexp.MustCompile(`(?m)^b` + strconv.Itoa(b) + ` +[█·░]`).MatchString(v) {
			return false
		}
	}
	return true
}

func checkAt80x24(t *testing.T) {
	v := arenaWith(t, 5, 80, 24)
	if shown, _ := legendShown(t, v, 80); !lanesShown(v, 5) || shown != 1 || !strings.Contains(v, "\nLOG\n") {
		t.Errorf("80 × 24, five buyers: want every lane, one line of the legend and the LOG:\n%s", v)
	}
	v = arenaWith(t, 10, 80, 24)
	if shown, _ := legendShown(t, v, 80); !lanesShown(v, 10) || shown != 0 {
		t.Errorf("80 × 24, ten buyers: want every lane and no legend:\n%s", v)
	}
	m := newModel(Options{offline: true})
	defer m.shutdown()
	loadRecorded(t, m)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	v = m.View()
	if shown, _ := legendShown(t, v, 80); shown != 0 || !strings.Contains(v, "Step 4 broke.") || !strings.Contains(v, "the fix is step 8") {
		t.Errorf("80 × 24 after a break: want the lesson and the hand-off, no legend:\n%s", v)
	}
}

func checkAt100x30(t *testing.T) {
	for i, st := range catalog.Steps { // every step: a quorum's node lanes too
		v := arenaOn(t, i, 5, 100, 30)
		if shown, all := legendShownOn(t, i, v, 100); !lanesShown(v, 5) || shown != all {
			t.Errorf("%s at 100 × 30, five buyers: want every lane and the whole legend (%d of %d lines shown):\n%s", st.Slug, shown, all, v)
		}
	}
}

// checkLegendNamesEveryMark: every glyph a lane is drawn with and every mark the timeline draws
// is named in the legend.
func checkLegendNamesEveryMark(t *testing.T) {
	var legend strings.Builder
	for _, items := range legendItems {
		for _, it := range items {
			legend.WriteString(" " + it)
		}
	}
	named := func(r rune) bool {
		return regexp.MustCompile(`(^|[ /])` + regexp.QuoteMeta(string(r)) + `([ /]|$)`).MatchString(legend.String())
	}
	for _, g := range glyph {
		if g != ' ' && !named(g) {
			t.Errorf("the legend does not name the lanes' %q", g)
		}
	}
	for _, g := range picture.Legend {
		for _, mk := range g.Marks {
			if r := picture.Marks[mk].Glyph; !g.Page && !named(r) {
				t.Errorf("the legend does not name the mark %q", r)
			}
		}
	}
}

// checkMoveCaps: the lasting moves' caps README gives are the ones the keys' help says.
func checkMoveCaps(t *testing.T) {
	for _, c := range []struct {
		sc  *scenario.Scenario
		cap string
	}{{scenario.UnlockRace, "at most 4 × TTL"}, {scenario.Slow, "at most 6 × TTL"}} {
		if !strings.Contains(c.sc.Help, c.cap) {
			t.Errorf("%s's key says %q, README says %s", c.sc.Name, c.sc.Help, c.cap)
		}
	}
}

// checkFailoverWaits: the live keys' test in internal/scenario presses f at the lab's default
// buyers on every step it samples (14 and 16 included), and the failover key is the one that
// holds new orders first (Scenario.Quiet).
func checkFailoverWaits(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "internal", "scenario", "live_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`buyers := 5 // the lab's default`).Match(b) || regexp.MustCompile(`buyers = 2`).Match(b) {
		t.Errorf("TestLiveKeysBreakAsTheMatrix no longer presses every key at five buyers: the curriculum's claim needs its evidence again")
	}
	m := newModel(Options{offline: true, Stock: 100})
	defer m.shutdown()
	if m.buyers != 5 {
		t.Errorf("a live session starts with %d buyers, not five", m.buyers)
	}
	for _, sc := range scenario.Keyed() {
		if sc.Quiet != (sc.Name == steps.Failover) {
			t.Errorf("%s: Quiet %v", sc.Name, sc.Quiet)
		}
	}
}
