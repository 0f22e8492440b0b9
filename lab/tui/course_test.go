package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// row makes a step descriptor with one row of the matrix: scenario → kinds.
func row(n int, title string, expect map[steps.Scenario][]steps.Kind) *steps.Step {
	return &steps.Step{Slug: fmt.Sprintf("%02d_x", n), Number: n, Title: title, Claim: "claim", Fixes: "fixes",
		Breaks: "breaks", Hint: "hint", Lesson: "lesson", BreakWith: steps.Slow, Expect: expect}
}

// TestBaseAndSideRoad: a step's Base, not its place in the catalog, is what the picker says it
// grew from and what its code pane diffs against; a side road (Side, no number) is beside the
// line: its hand-off goes on along the line from its base.
func TestBaseAndSideRoad(t *testing.T) {
	ov := steps.Overlap
	one := row(1, "one", map[steps.Scenario][]steps.Kind{steps.Slow: {ov}})
	one.Source = fstest.MapFS{"lock.go": {Data: []byte("package lock\n// one\n")}}
	two := row(2, "two", map[steps.Scenario][]steps.Kind{steps.Slow: {ov}})
	two.Base, two.Source = one.Slug, fstest.MapFS{"lock.go": {Data: []byte("package lock\n// two\n")}}
	side := row(0, "side", map[steps.Scenario][]steps.Kind{steps.Slow: {ov}})
	side.Slug, side.Side, side.Base = "getset", true, two.Slug
	side.Source = fstest.MapFS{"lock.go": {Data: []byte("package lock\n// side\n")}}
	three := row(3, "three", nil)
	three.Base, three.Source = one.Slug, fstest.MapFS{"lock.go": {Data: []byte("package lock\n// three\n")}}
	all := []*steps.Step{one, two, side, three}
	m := newModel(Options{offline: true, steps: all})
	defer m.shutdown()
	if course.Last(all) != 3 || course.ByNumber(all, 3) != 3 || course.Numbered(side) {
		t.Fatalf("the line: last %d, step 3 at %d, side road numbered %v", course.Last(all), course.ByNumber(all, 3), course.Numbered(side))
	}
	press(m, "3")
	v := m.View()
	for _, want := range []string{"▸ 3  three  ← grows from step 1", "Grows from step 1:", "  ·  side  ← beside step 2"} {
		if !strings.Contains(v, want) {
			t.Errorf("the picker lacks %q:\n%s", want, v)
		}
	}
	press(m, "tab")
	if v := m.View(); !strings.Contains(v, "diff from step 1: +1 −1 lines") || !strings.Contains(v, "- // one") || !strings.Contains(v, "+ // three") {
		t.Errorf("step 3's code pane does not diff against step 1:\n%s", v)
	}
	press(m, "left")
	if v := m.View(); !strings.Contains(v, "side road: getset") || !strings.Contains(v, "diff from step 2") {
		t.Errorf("the side road:\n%s", v)
	}
	h := course.NewHandoff(all, 2, steps.Slow, []steps.Kind{ov}, nil)
	if h.Next != 3 || h.Fix != 3 || h.JumpKey(all, 3) != "→" {
		t.Errorf("from the side road: next %d, fix %d", h.Next, h.Fix)
	}
	h = course.NewHandoff(all, 0, steps.Slow, []steps.Kind{ov}, nil)
	if h.Next != 1 || h.Fix != 3 || h.JumpKey(all, 3) != "3" || !strings.Contains(h.Sentence(all), "press 3") {
		t.Errorf("from step 1: next %d, fix %d, %q", h.Next, h.Fix, h.Sentence(all))
	}
}

// seventeen is a catalog of 17 numbered steps, as the lab will have, made of the nine there are.
func seventeen() []*steps.Step {
	var out []*steps.Step
	for i := 0; i < 17; i++ {
		st := *catalog.Steps[i%len(catalog.Steps)]
		st.Number, st.Slug, st.Side, st.Base = i+1, fmt.Sprintf("%02d_%s", i+1, st.Slug[3:]), false, ""
		out = append(out, &st)
	}
	return out
}

// TestTypingStepNumbers: with steps 10–17, a digit that may go on waits for the next one, enter,
// or the pause; one that cannot is taken at once; several digits in one message count in order.
func TestTypingStepNumbers(t *testing.T) {
	m := newModel(Options{offline: true, steps: seventeen()})
	defer m.shutdown()
	if h := m.keys.Jump.Help(); h.Key != "1-17" {
		t.Errorf("the jump key says %q", h.Key)
	}
	press(m, "1")
	if m.cur != 0 || m.typed != "1" || !strings.Contains(m.msg, "type the next digit") {
		t.Fatalf("1: index %d, typed %q, msg %q", m.cur, m.typed, m.msg)
	}
	press(m, "7")
	if m.cur != 16 || m.typed != "" {
		t.Fatalf("1 7: index %d, typed %q", m.cur, m.typed)
	}
	press(m, "2")
	if m.cur != 1 {
		t.Fatalf("2: index %d", m.cur)
	}
	press(m, "1", "enter")
	if m.cur != 0 || m.scr != scrPicker {
		t.Fatalf("1 enter: index %d, screen %d", m.cur, m.scr)
	}
	press(m, "12")
	if m.cur != 11 {
		t.Fatalf("12 in one message: index %d", m.cur)
	}
	press(m, "1")
	m.Update(typedMsg{seq: m.typing - 1}) // a stale wait is dropped
	if m.typed != "1" {
		t.Fatal("a stale wait ended the number")
	}
	m.Update(typedMsg{seq: m.typing})
	if m.cur != 0 || m.typed != "" {
		t.Fatalf("1, then the pause: index %d, typed %q", m.cur, m.typed)
	}
	press(m, "5", "1", "down") // 5 goes at once; 1 waits; ↓ ends the number and moves on
	if m.cur != 5 || m.typed != "" {
		t.Fatalf("5 1 ↓: index %d, typed %q", m.cur, m.typed)
	}
	press(m, "0")
	if m.cur != 5 || !strings.Contains(m.msg, "there is no step 0") {
		t.Fatalf("0: index %d, msg %q", m.cur, m.msg)
	}
}

// TestPickerScrollsALongCatalog: 17 steps at 80×24 — the chosen step and its details are on
// screen, the rest is counted, and pgdn pages.
func TestPickerScrollsALongCatalog(t *testing.T) {
	m := newModel(Options{offline: true, steps: seventeen()})
	defer m.shutdown()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(m, "1", "5")
	v := m.View()
	for _, want := range []string{"Step 15/17", "▸ 15", "↑", "more", "Still breaks:", "Try:", "1-17 go to", "q quit"} {
		if !strings.Contains(v, want) {
			t.Errorf("step 15 of 17 at 80×24 lacks %q:\n%s", want, v)
		}
	}
	if n := len(strings.Split(v, "\n")); n > 24 {
		t.Errorf("%d lines", n)
	}
	press(m, "home")
	if m.cur != 0 {
		t.Fatalf("home: %d", m.cur)
	}
	press(m, "pgdown")
	if m.cur < 5 || !strings.Contains(m.View(), fmt.Sprintf("▸ %2d", m.cur+1)) {
		t.Fatalf("pgdn went to index %d:\n%s", m.cur, m.View())
	}
}

// TestHandoffForTheLearner: the learner's own lock with no row and no source known broke as the
// last step that breaks with the same kinds under the scenario; the fix is sought after that
// step, not from step 1 (step 2 "clears" overlap under pause only by never letting go), and no
// step is named as the one it breaks like (a grade, which knows the row, names it).
func TestHandoffForTheLearner(t *testing.T) {
	mine := &steps.Step{Slug: "steps/mine", Side: true}
	all := append(slices.Clone(catalog.Steps), mine)
	i := len(all) - 1
	kinds := catalog.Steps[course.ByNumber(catalog.Steps, 13)].Expect[steps.Pause]
	h := course.NewHandoff(all, i, steps.Pause, kinds, mine)
	if h.Next != -1 || h.Like < 0 || all[h.Like].Number != 15 || h.Fix < 0 || all[h.Fix].Number != 17 {
		t.Fatalf("next %d, like %d, fix %d", h.Next, h.Like, h.Fix)
	}
	if s := h.Sentence(all); strings.Contains(s, "breaks as") || !strings.Contains(s, "tep 16 (") || !strings.Contains(s, "the fix is step 17 (") {
		t.Errorf("%q", s)
	}
}
