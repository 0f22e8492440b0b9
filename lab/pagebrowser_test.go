package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The pages in a real browser: headless Chromium renders each kind of page the lab writes, and its
// DOM is read against what the terminal says.

// shotsDir is where the browser test keeps its screenshots: $LOCKSTEP_SHOTS if set (to refresh
// docs/lab-run-page.png), else the test's own folder.
func shotsDir(t *testing.T) string {
	if d := os.Getenv("LOCKSTEP_SHOTS"); d != "" {
		return d
	}
	return t.TempDir()
}

// TestPagesInBrowser opens each kind of page in headless Chromium, as each command writes it — a
// run's (a failing cell, 04 × slow; several nodes, 15 × restart; a fenced one, 16 × pause; a clean
// one, 17 × pause), judge's of a run's page, a matrix's of those four steps, and lab grade's of a
// learner's copy of step 04 — and reads the rendered DOM against what the terminal says: no
// console error; the verdict, the referee's sentences and the report; a lane per buyer, per lock
// node and for the inventory; a red span per overlapping pair; every mark the lab drew; ←/→ and a
// hover saying the events in sim's words; a cell's link scrolling to its timeline; and lab judge
// reading each page back to the same verdicts. Each page is screenshot. It runs in parallel with
// the other tests, taking the package's play and bubble for each command it runs (inProcess).
func TestPagesInBrowser(t *testing.T) {
	t.Parallel()
	b := startBrowser(t)
	dir, shots := t.TempDir(), shotsDir(t)
	named := []struct{ step, sc string }{{"04", "slow"}, {"15", "restart"}, {"16", "pause"}, {"17", "pause"}}
	for _, c := range named {
		file := filepath.Join(dir, "run-"+c.step+".html")
		var out, errw bytes.Buffer
		var err error
		inProcess(t, func() {
			err = run([]string{"run", "-step", c.step, "-scenario", c.sc, "-json", "-html", file}, &out, &errw)
		})
		if err != nil {
			t.Fatalf("run %s %s: %v\n%s", c.step, c.sc, err, errw.String())
		}
		var rep referee.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		tb, took := b.open(file, 1280, 900)
		t.Logf("%s × %s: %d bytes, ready %s after navigating", rep.Step, rep.Scenario, fileSize(t, file), took.Round(time.Millisecond))
		checkRunPage(t, tb, &rep, "")
		tb.screenshot(filepath.Join(shots, "run-"+c.step+"-"+c.sc+".png"), true)
		judgedBack(t, file, 1)
		if c.step == "04" {
			// judge writes a page of its own of what it read
			judged := filepath.Join(dir, "judged-04.html")
			if err := run([]string{"judge", "-html", judged, file}, &out, &errw); err != nil {
				t.Errorf("judge -html of the run's page: %v\n%s", err, errw.String())
			}
			jt, _ := b.open(judged, 1280, 900)
			checkRunPage(t, jt, &rep, "")
		}
	}

	// a matrix's page: its table as the matrix prints it, each played cell a link to its run's
	// timeline, and the four cells' runs there as their own pages show them
	file := filepath.Join(dir, "matrix.html")
	var out, errw bytes.Buffer
	var err error
	inProcess(t, func() { err = run([]string{"matrix", "-steps", "04,15,16,17", "-json", "-html", file}, &out, &errw) })
	if err != nil && exitCode(err) != 1 {
		t.Fatalf("matrix: %v\n%s", err, errw.String())
	}
	var cells []cell
	if err := json.Unmarshal(out.Bytes(), &cells); err != nil {
		t.Fatal(err)
	}
	tb, took := b.open(file, 1280, 900)
	t.Logf("the matrix of 04, 15, 16 and 17: %d bytes, ready %s after navigating", fileSize(t, file), took.Round(time.Millisecond))
	noProblems(t, tb, "the matrix's page")
	if n := tb.num(`document.querySelectorAll("table.matrix tbody tr").length`); n != 4 {
		t.Errorf("the matrix's page has %v rows, want 4", n)
	}
	played := 0
	for _, c := range cells {
		id := page.RunID(c.Step, c.Scenario)
		if c.Skipped != "" {
			continue
		}
		played++
		if got := tb.str(fmt.Sprintf(`document.querySelector('a[href="#%s"]').textContent`, id)); got != course.CellText(c) {
			t.Errorf("%s × %s: the table says %q, the matrix %q", c.Step, c.Scenario, got, course.CellText(c))
		}
		checkSentences(t, tb, "#"+id, c.Step+" × "+c.Scenario, c.Scenario, course.CellText(c), c.Explain)
	}
	if n := tb.num(`document.querySelectorAll("table.matrix td a").length`); int(n) != played {
		t.Errorf("the matrix's page links %v cells, want %d", n, played)
	}
	reps := judgedBack(t, file, played)
	for _, c := range named {
		st, err := catalog.Find(c.step)
		if err != nil {
			t.Fatal(err)
		}
		id := page.RunID(st.Slug, c.sc)
		followLink(t, tb, id)
		checkRunPage(t, tb, reps[id], "#"+id)
		if c.step == "16" {
			tb.screenshot(filepath.Join(shots, "matrix.png"), false)
		}
	}

	// a grade's page, as lab grade writes it of a learner's copy of step 04: the learner's row
	// above step 04's (the same row) and the next nearest, its verdicts and sentences as the
	// terminal prints them
	learner := sharedCopy(t, "04_atomic_ttl", "README.md")
	file = filepath.Join(dir, "grade.html")
	code, gradeOut, gradeErr := grade(t, learner, "-html", file)
	if code != 1 || !strings.Contains(gradeOut, "Your row of the matrix:") {
		t.Fatalf("lab grade of a copy of step 04 exits %d, want 1 with its row\n%s\n%s", code, gradeOut, gradeErr)
	}
	slug := strings.TrimPrefix(filepath.ToSlash(learner), "../")
	tb, _ = b.open(file, 1280, 900)
	noProblems(t, tb, "the grade's page")
	if like := tb.str(`document.querySelector("p.like").textContent`); !strings.Contains(gradeOut, "\n"+like+"\n") || !strings.Contains(like, "step 4's") {
		t.Errorf("the grade's page says %q; lab grade printed\n%s", like, gradeOut)
	}
	heads := tb.str(`Array.from(document.querySelectorAll("table.matrix tbody th")).map(function(e){return e.textContent}).join("|")`)
	if want := slug + "your lock|04_atomic_ttlthe same row, cell for cell|"; !strings.HasPrefix(heads, want) || strings.Count(heads, "|") != page.NearestRows {
		t.Errorf("the grade's rows: %q, want %q and %d more", heads, want, page.NearestRows-1)
	}
	graded := gradedLines(t, gradeOut)
	mine := tb.eval(`Array.from(document.querySelectorAll("tr.mine td")).map(function(e){return e.textContent})`).([]any)
	if len(mine) != len(scenario.Names()) || len(graded) != len(scenario.Names()) {
		t.Fatalf("the learner's row has %d cells on the page, %d in lab grade's output, want %d", len(mine), len(graded), len(scenario.Names()))
	}
	links := 0
	for i, g := range graded {
		if text := mine[i].(string); text != g.verdict && !(text == "skipped" && strings.HasPrefix(g.verdict, "skipped: ")) {
			t.Errorf("%s: the grade's page says %q, lab grade %q", g.scenario, text, g.verdict)
		}
		if strings.HasPrefix(g.verdict, "skipped") {
			continue
		}
		links++
		checkSentences(t, tb, "#"+page.RunID(slug, g.scenario), slug+" × "+g.scenario, g.scenario, g.verdict, g.explain)
	}
	if n := tb.num(`document.querySelectorAll("tr.mine td a").length`); int(n) != links {
		t.Errorf("the learner's row links %v cells, want %d", n, links)
	}
	reps = judgedBack(t, file, links)
	id := page.RunID(slug, "slow")
	followLink(t, tb, id)
	checkRunPage(t, tb, reps[id], "#"+id)
	tb.screenshot(filepath.Join(shots, "grade.png"), false)
	t.Logf("screenshots in %s", shots)
}

// judgedBack runs lab judge on a page and checks that it reads n runs back to the verdicts they
// earned; it returns the reports of the runs the page carries, judged again, by run id.
func judgedBack(t *testing.T, file string, n int) map[string]*referee.Report {
	t.Helper()
	var out, errw bytes.Buffer
	want := fmt.Sprintf("%s judged again from their histories: %d as when played, 0 differ, 0 without a verdict", course.Count(n, "run", "runs"), n)
	if err := run([]string{"judge", file}, &out, &errw); err != nil || !strings.Contains(out.String(), want) {
		t.Errorf("judge of %s: %v\n%s", filepath.Base(file), err, out.String())
	}
	runs, err := readRuns(file)
	if err != nil {
		t.Fatal(err)
	}
	reps := map[string]*referee.Report{}
	for _, r := range runs {
		reps[page.RunID(r.Step, r.Scenario)] = referee.JudgeCell(r.History, r.Others)
	}
	return reps
}

// gradedCell is one scenario of lab grade's output: its verdict as printed and the sentences under it.
type gradedCell struct {
	scenario, verdict string
	explain           []referee.Finding
}

// gradedLines reads the row lab grade printed, in its order.
func gradedLines(t *testing.T, out string) []gradedCell {
	t.Helper()
	var cells []gradedCell
	head, _, _ := strings.Cut(out, "\nYour row of the matrix:")
	scLine := regexp.MustCompile(`^  ([a-z-]+)  +(\S.*)$`)
	kindLine := regexp.MustCompile(`^   +([a-z-]+): (.*)$`)
	for _, l := range strings.Split(head, "\n")[1:] {
		if m := scLine.FindStringSubmatch(l); m != nil {
			cells = append(cells, gradedCell{scenario: m[1], verdict: m[2]})
		} else if m := kindLine.FindStringSubmatch(l); m != nil && m[1] != "note" && len(cells) > 0 {
			c := &cells[len(cells)-1]
			c.explain = append(c.explain, referee.Finding{Kind: steps.Kind(m[1]), Sentence: m[2]})
		} else if strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "note: ") {
			t.Fatalf("a line of lab grade's output this test does not read: %q", l)
		}
	}
	return cells
}

// checkSentences checks the section scope of a page: its verdict line says what cell (as the
// terminal prints it: "✓", "overlap, oversold", "? …") says of scenario sc, flag by flag over the
// kinds sc judges (scenario.Judges, not the page's own reading), and its list the referee's
// sentences, in order.
func checkSentences(t *testing.T, tb *tab, scope, what string, sc string, cell string, explain []referee.Finding) {
	t.Helper()
	got := tb.str(fmt.Sprintf(`document.querySelector(%q).textContent`, scope+" .verdict .cell"))
	if want := wantVerdict(steps.Scenario(sc), cell); want != "" && got != want || want == "" && !strings.HasPrefix(got, "verdict: ") {
		t.Errorf("%s: the page's verdict %q, the terminal's cell %q (want %q)", what, got, cell, want)
	}
	if strings.Contains(got, "✓ ✓") {
		t.Errorf("%s: the page's verdict %q says ✓ twice", what, got)
	}
	var want []string
	for _, f := range explain {
		want = append(want, string(f.Kind)+": "+f.Sentence)
	}
	got = tb.str(fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(function(e){return e.textContent}).join("\n")`, scope+" .explain li"))
	if got != strings.Join(want, "\n") {
		t.Errorf("%s: the page's sentences\n%s\nthe terminal's\n%s", what, got, strings.Join(want, "\n"))
	}
}

// wantVerdict is the verdict line a page must show for a cell the terminal printed as cell under
// scenario sc: "✓ none of K happened" for a pass, else ✗ or ✓ for each kind sc judges; "" for a
// cell with no verdict ("?"), whose flags the terminal's cell does not say.
func wantVerdict(sc steps.Scenario, cell string) string {
	judged := scenario.Judges(sc)
	switch {
	case cell == "✓":
		return "verdict: ✓ none of " + course.KindList(judged) + " happened"
	case cell == "?" || strings.HasPrefix(cell, "? "):
		return ""
	}
	broke := strings.Split(cell, ", ")
	var flags []string
	for _, k := range judged {
		mark := "✓"
		if slices.Contains(broke, string(k)) {
			mark = "✗"
		}
		flags = append(flags, mark+" "+string(k))
	}
	return "verdict: " + strings.Join(flags, " ")
}

func fileSize(t *testing.T, file string) int64 {
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// noProblems fails t for every console error or exception of the page.
func noProblems(t *testing.T, tb *tab, what string) {
	t.Helper()
	for _, p := range tb.problems() {
		t.Errorf("%s: %s", what, p)
	}
}

// checkRunPage reads the page of rep's run (its only run) and checks it against rep and against
// the timeline the lab drew from rep's history.
func checkRunPage(t *testing.T, tb *tab, rep *referee.Report, scope string) {
	t.Helper()
	what := rep.Step + " × " + rep.Scenario
	noProblems(t, tb, what)
	// in is a selector within scope, quoted for the page's script
	in := func(sel string) string {
		if scope != "" {
			sel = scope + " " + sel
		}
		return strconv.Quote(sel)
	}
	count := func(sel string) int { return int(tb.num(`document.querySelectorAll(` + in(sel) + `).length`)) }
	texts := func(sel string) string {
		return tb.str(`Array.from(document.querySelectorAll(` + in(sel) + `)).map(function(e){return e.textContent}).join(",")`)
	}
	c := matrix.CellOf(rep)
	checkSentences(t, tb, scope, what, rep.Scenario, course.CellText(c), rep.Explain)
	if got := tb.str(`document.querySelector(` + in("details.report pre") + `).textContent`); got != rep.Text() {
		t.Errorf("%s: the page's report\n%s\nlab run's\n%s", what, got, rep.Text())
	}
	tb2 := page.NewTables()
	p := page.NewPlay(rep.History, tb2)
	nodes := max(len(rep.History.Nodes), 1)
	for kind, n := range map[string]int{"buyer": rep.Buyers, "node": nodes, "inventory": 1} {
		if got := count(".tl-names .name.lane." + kind); got != n {
			t.Errorf("%s: %v %s lanes, want %d", what, got, kind, n)
		}
	}
	if got := tb.num(`new Set(Array.from(document.querySelectorAll(` + in(".bar.over") + `)).map(function(e){return e.dataset.e})).size`); int(got) != len(rep.Overlaps) {
		t.Errorf("%s: %v red spans (overlapping pairs), the referee found %d overlaps", what, got, len(rep.Overlaps))
	}
	classes := map[string]int{}
	for _, m := range p.Marks {
		classes[tb2.Styles[m.Style][0]]++
	}
	for class, n := range classes {
		if got := count(".timeline .mk." + class); got != n {
			t.Errorf("%s: %v marks of class %s on the page, the lab drew %d", what, got, class, n)
		}
	}
	// ←/→ walk the events as rewind does, each said in sim's words
	said := func() string { return tb.str(`document.querySelector(` + in(".tl-said") + `).textContent`) }
	for range 3 {
		tb.key("ArrowRight", 39)
	}
	ev := p.Events[2]
	if s := said(); !strings.HasPrefix(s, fmt.Sprintf("◀▶ 3/%d · ", len(p.Events))) || !strings.HasSuffix(s, tb2.Words[ev.Word]) {
		t.Errorf("%s: after → → →, the page says %q; the third event is %q", what, s, tb2.Words[ev.Word])
	}
	tb.key("End", 35)
	tb.key("ArrowLeft", 37)
	ev = p.Events[len(p.Events)-2]
	if s := said(); !strings.HasPrefix(s, fmt.Sprintf("◀▶ %d/%d · ", len(p.Events)-1, len(p.Events))) || !strings.HasSuffix(s, tb2.Words[ev.Word]) {
		t.Errorf("%s: after End ←, the page says %q; the last event but one is %q", what, s, tb2.Words[ev.Word])
	}
	// hovering over a mark says its event; clicking it moves the cursor there
	x, y := tb.center(strings.TrimPrefix(scope+" .mk.write", " "))
	tb.hover(x, y)
	m := int(tb.num(`+document.querySelector(` + in(".mk.write") + `).dataset.m`))
	words := tb2.Words[p.Events[p.Marks[m].First].Word]
	if tip := tb.str(`document.getElementById("tip") ? document.getElementById("tip").textContent : ""`); !strings.Contains(tip, words) {
		t.Errorf("%s: hovering over the first write says %q, want %q", what, tip, words)
	}
	tb.click(x, y)
	if s := said(); !strings.HasSuffix(s, words) {
		t.Errorf("%s: clicking the first write says %q, want %q", what, s, words)
	}
	switch {
	case len(rep.History.Nodes) > 1:
		if got := texts(".tl-names .name.node"); got != strings.Join(rep.History.Nodes, ",") {
			t.Errorf("%s: node lanes %q, want %v", what, got, rep.History.Nodes)
		}
		if rep.Scenario == string(steps.Restart) {
			for _, sel := range []string{".mk.node", ".mk.lost", ".bar.lock.left"} {
				if count(sel) == 0 {
					t.Errorf("%s: no %s: the restart, the lock it lost, and what the holder's lock left on another node", what, sel)
				}
			}
		}
	case rep.Step == "16_fencing":
		labels := texts(".mk.read sub, " + scopeOf(scope) + ".mk.write sub, " + scopeOf(scope) + ".mk.fenced sub")
		if !regexp.MustCompile(`^(b\d+·t\d+,?)+$`).MatchString(labels) || (rep.Scenario == string(steps.Pause) && count(".mk.fenced") == 0) {
			t.Errorf("%s: the inventory's marks should carry their tokens, and one refused write: %q", what, labels)
		}
	case slices.Contains(rep.Violations, steps.ForeignRelease) && rep.Scenario == string(steps.Slow):
		for _, sel := range []string{".mk.foreign", ".mk.expired"} {
			if count(sel) == 0 {
				t.Errorf("%s: no %s: the lock that ran out, and the one deleted by another buyer", what, sel)
			}
		}
	}
}

// scopeOf is scope as the start of a selector within it: "" or "#run-… ".
func scopeOf(scope string) string {
	if scope == "" {
		return ""
	}
	return scope + " "
}

// followLink clicks the table's link to run id and checks that the page scrolled to that run,
// with its timeline drawn (the page draws it on the address's change, which comes a moment after
// the address itself).
func followLink(t *testing.T, tb *tab, id string) {
	t.Helper()
	x, y := tb.center(fmt.Sprintf(`a[href="#%s"]`, id))
	tb.click(x, y)
	drawn := fmt.Sprintf(`location.hash === "#%s" && document.getElementById(%q).querySelector(".timeline").dataset.drawn === "1"`, id, id)
	for deadline := time.Now().Add(5 * time.Second); tb.eval(drawn) != true; {
		if time.Now().After(deadline) {
			t.Fatalf("clicking the link to %s: the address is %q, and its timeline is not drawn", id, tb.str(`location.hash`))
		}
		time.Sleep(20 * time.Millisecond)
	}
	noProblems(t, tb, "after the link to "+id)
	if top := tb.num(fmt.Sprintf(`document.getElementById(%q).getBoundingClientRect().top`, id)); top < -2 || top > 40 {
		t.Errorf("after the link to %s, its section is %vpx from the top of the window", id, top)
	}
}
