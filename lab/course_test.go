package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// row makes a step descriptor with one row of the matrix: scenario → kinds.
func row(n int, title string, expect map[steps.Scenario][]steps.Kind) *steps.Step {
	return &steps.Step{Slug: fmt.Sprintf("%02d_x", n), Number: n, Title: title, Claim: "claim", Fixes: "fixes",
		Breaks: "breaks", Hint: "hint", Lesson: "lesson", BreakWith: steps.Slow, Expect: expect}
}

// TestHandoffNamesTheStepThatClears: the fix is the first later step whose row clears every kind
// that broke this one; the next step is the fix only when it is; with none, it says so.
func TestHandoffNamesTheStepThatClears(t *testing.T) {
	ov, os, fr := steps.Overlap, steps.Oversold, steps.ForeignRelease
	slow := steps.Slow
	all := []*steps.Step{
		row(1, "one", map[steps.Scenario][]steps.Kind{slow: {ov, os, fr}}),
		row(2, "two", map[steps.Scenario][]steps.Kind{slow: {ov, os}}),
		row(3, "three", map[steps.Scenario][]steps.Kind{slow: {ov, os}}),
		row(4, "four", nil),
		row(5, "five", map[steps.Scenario][]steps.Kind{slow: {ov}}),
	}
	h := newHandoff(all, 0, slow, []steps.Kind{ov, os, fr})
	if h.next != 1 || h.fix != 3 || !slices.Equal(h.clears, []steps.Kind{fr}) {
		t.Fatalf("from 1: next %d, fix %d, clears %v", h.next, h.fix, h.clears)
	}
	if s := h.sentence(all); s != "Step 2 clears foreign-release, not overlap, oversold; the fix is step 4 (four): press 4 for its diff." {
		t.Errorf("from 1: %q", s)
	}
	if s := newHandoff(all, 1, slow, []steps.Kind{ov, os}).sentence(all); s != "Step 3 does not clear overlap, oversold under slow; the fix is step 4 (four): press 4 for its diff." {
		t.Errorf("from 2: %q", s)
	}
	if s := newHandoff(all, 2, slow, []steps.Kind{ov}).sentence(all); s != "The fix: step 4 (four) clears overlap under slow — press → for its diff." {
		t.Errorf("from 3: %q", s)
	}
	if h := newHandoff(all, 4, slow, []steps.Kind{ov}); h.next != -1 || h.fix != -1 || !strings.HasPrefix(h.sentence(all), "No later step clears overlap under slow") {
		t.Errorf("from the last: %+v %q", h, h.sentence(all))
	}
	if s := newHandoff(all, 4, steps.Failover, []steps.Kind{ov}).sentence(all); !strings.Contains(s, "no lock on one Redis survives a failover") {
		t.Errorf("failover: %q", s)
	}
}

// TestHandoffFromTheCatalog: the catalog's own rows send step 4 (slow) to step 8 and step 5
// (unlock-race) to step 9, not to the step after them; the steps whose next step clears them are
// sent there.
func TestHandoffFromTheCatalog(t *testing.T) {
	all := catalog.Steps
	for _, c := range []struct{ from, fix int }{{1, 2}, {2, 3}, {3, 4}, {4, 8}, {5, 9}, {6, 7}, {7, 8}, {8, 9}} {
		st := all[c.from-1]
		h := newHandoff(all, c.from-1, st.BreakWith, st.Expect[st.BreakWith])
		if h.fix < 0 || all[h.fix].Number != c.fix {
			t.Errorf("step %d under %s: fix %d, want step %d", c.from, st.BreakWith, h.fix+1, c.fix)
		}
	}
}

// seventeen is a catalog of 17 numbered steps, as the lab will have, made of the nine there are.
func seventeen() []*steps.Step {
	var out []*steps.Step
	for i := 0; i < 17; i++ {
		st := *catalog.Steps[i%len(catalog.Steps)]
		st.Number, st.Slug = i+1, fmt.Sprintf("%02d_%s", i+1, st.Slug[3:])
		out = append(out, &st)
	}
	return out
}

// TestTypingStepNumbers: with steps 10–17, a digit that may go on waits for the next one, enter,
// or the pause; one that cannot is taken at once; several digits in one message count in order.
func TestTypingStepNumbers(t *testing.T) {
	m := newModel(tuiOptions{offline: true, steps: seventeen()})
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
	m := newModel(tuiOptions{offline: true, steps: seventeen()})
	defer m.shutdown()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(m, "1", "5")
	v := m.View()
	for _, want := range []string{"Step 15/17", "▸ 15", "↑", "more", "Still breaks:", "Try:", "1-17 go to step", "q quit"} {
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
