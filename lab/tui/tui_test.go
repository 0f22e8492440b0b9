package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/muesli/termenv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/charmbracelet/x/exp/teatest.NewTestModel.func2"))
}

func keyMsg(s string) tea.KeyMsg {
	switch s {
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "home":
		return tea.KeyMsg{Type: tea.KeyHome}
	case "end":
		return tea.KeyMsg{Type: tea.KeyEnd}
	case "pgup":
		return tea.KeyMsg{Type: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyMsg{Type: tea.KeyPgDown}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case " ":
		return tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
}

func press(m *model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(keyMsg(k))
	}
	return cmd
}

// TestKeysMoveBetweenSteps checks the picker's keys: arrows, digits, the bounds.
func TestKeysMoveBetweenSteps(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	if m.cur != 0 || m.scr != scrPicker {
		t.Fatalf("start: step index %d, screen %d", m.cur, m.scr)
	}
	press(m, "left")
	if m.cur != 0 {
		t.Fatalf("← at step 1 moved to index %d", m.cur)
	}
	press(m, "right", "right")
	if m.cur != 2 {
		t.Fatalf("→→: index %d, want 2", m.cur)
	}
	press(m, "9")
	if m.cur != course.ByNumber(m.steps, 9) {
		t.Fatalf("9: index %d", m.cur)
	}
	last := len(m.steps) - 1
	press(m, fmt.Sprint(m.steps[last].Number))
	if m.cur != last {
		t.Fatalf("%d: index %d", m.steps[last].Number, m.cur)
	}
	press(m, "right")
	if m.cur != last {
		t.Fatalf("→ at the last step moved to index %d", m.cur)
	}
	press(m, "4")
	if want := fmt.Sprintf("Step 4/%d", course.Last(m.steps)); m.cur != 3 || !strings.Contains(m.View(), want) {
		t.Fatalf("4: index %d, view lacks %s", m.cur, want)
	}
}

// TestKeysScreens checks enter, tab, esc, ? and q.
func TestKeysScreens(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "enter")
	if m.scr != scrArena || m.ar == nil {
		t.Fatalf("enter: screen %d, arena %v", m.scr, m.ar != nil)
	}
	press(m, "tab")
	if m.scr != scrCode {
		t.Fatalf("tab: screen %d", m.scr)
	}
	press(m, "c")
	if m.scr != scrArena {
		t.Fatalf("c in the code pane: screen %d", m.scr)
	}
	press(m, "?")
	if !m.help || !strings.Contains(m.View(), "crash") {
		t.Fatal("? did not open help")
	}
	press(m, "x") // keys other than ? and esc do nothing under help
	press(m, "?")
	if m.help {
		t.Fatal("? did not close help")
	}
	press(m, "esc")
	if m.scr != scrPicker || m.ar != nil {
		t.Fatalf("esc: screen %d", m.scr)
	}
	if cmd := press(m, "q"); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("q does not quit")
	}
	if cmd := press(m, "ctrl+c"); cmd == nil || cmd() != tea.Quit() {
		t.Fatal("ctrl+c does not quit")
	}
}

// TestKeysSpeed checks [ and ] step through the speeds and stop at the ends.
func TestKeysSpeed(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "enter")
	if m.slow != 10 {
		t.Fatalf("default speed %g", m.slow)
	}
	press(m, "[")
	if m.slow != 20 || m.ar.timing.TTL != 4*time.Second {
		t.Fatalf("[: slow %g, TTL %s", m.slow, m.ar.timing.TTL)
	}
	press(m, "[")
	if m.slow != 20 {
		t.Fatalf("[ at the slowest: %g", m.slow)
	}
	press(m, "]", "]", "]", "]", "]")
	if m.slow != 1 || m.ar.timing != history.DefaultTiming() {
		t.Fatalf("] to the fastest: %g", m.slow)
	}
}

// TestKeysAfterBreakLeadToTheFix: after step 4 breaks under slow, the lab says step 5 clears only
// foreign-release and names step 8 as the fix; → opens step 5's diff saying so, and 8 opens step
// 8's diff as the fix.
func TestKeysAfterBreakLeadToTheFix(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	loadRecorded(t, m)
	v := m.View()
	five, eight := course.ByNumber(m.steps, 5), course.ByNumber(m.steps, 8)
	if h := m.handoff; h == nil || h.Next != five || h.Fix != eight {
		t.Fatalf("after the break: handoff %+v", h)
	}
	// → opens the entry after step 4 in the catalog: step 5, or a side road beside step 4
	next, nextKey := "→", "right"
	if five != m.cur+1 {
		next, nextKey = "5", "5"
	}
	for _, want := range []string{"Step 5 clears foreign-release, not overlap, oversold;", "the fix is step 8", "press 8", next + " step 5", "8 step 8: the fix"} {
		if !strings.Contains(strings.Join(strings.Fields(v), " "), want) {
			t.Errorf("after the break the view lacks %q:\n%s", want, v)
		}
	}
	press(m, nextKey)
	if m.cur != five || m.scr != scrCode || !m.code.diff {
		t.Fatalf("%s: index %d, screen %d, diff %v", next, m.cur, m.scr, m.code.diff)
	}
	if v := m.View(); !strings.Contains(v, "diff from step 4") || !strings.Contains(v, "+ ") ||
		!strings.Contains(v, "it clears foreign-release under slow, not all of") {
		t.Fatalf("step 5's code pane:\n%s", v)
	}
	press(m, "d")
	if v := m.View(); m.code.diff || !strings.Contains(v, "source of step 5") || strings.Contains(v, "   1 + ") {
		t.Fatalf("d did not switch to the source:\n%s", v)
	}
	press(m, "d", "8")
	if v := m.View(); m.cur != eight || m.scr != scrCode || !strings.Contains(v, "step 8 is the fix for step 4 under slow: its diff from step 7") {
		t.Fatalf("8 after the break: index %d:\n%s", m.cur, v)
	}
}

func TestLineDiff(t *testing.T) {
	a := strings.Split("a b c d e", " ")
	b := strings.Split("a x c d f e", " ")
	var got []string
	for _, op := range lineDiff(a, b) {
		got = append(got, string(op.op)+op.text)
	}
	want := " a -b +x  c  d +f  e"
	if strings.Join(got, " ") != want {
		t.Fatalf("diff = %q, want %q", strings.Join(got, " "), want)
	}
}

// TestInjectAnswer: a fault key's answer agrees with the reading taken after it.
func TestInjectAnswer(t *testing.T) {
	if s := injectAnswer(injectMsg{sc: scenario.Crash, err: arena.ErrNoHolder}, false, "x"); !strings.Contains(s, "nobody held the lock for a whole TTL after the key") {
		t.Errorf("no holder: %q", s)
	}
	taken := injectMsg{sc: scenario.Reentrant, err: arena.ErrNoHolder, lock: lockReading{st: arena.LockState{Held: true, Owner: 4}}}
	if s := injectAnswer(taken, false, "n"); !strings.Contains(s, "buyer 4 has taken it since — press n again") {
		t.Errorf("no holder, then buyer 4: %q", s)
	}
	if s := injectAnswer(injectMsg{sc: scenario.Crash, err: arena.ErrNoHolder}, true, "x"); !strings.Contains(s, "nobody was inside the critical section for a whole TTL") {
		t.Errorf("no lock: %q", s)
	}
	if s := injectAnswer(injectMsg{sc: scenario.Slow, who: 3}, false, "s"); !strings.Contains(s, "slow → buyer 3: its work") {
		t.Errorf("hit: %q", s)
	}
}

// TestRepeatedKeys: several + - [ ] in one message count once each (problem 11); [ ] go to the
// nearest level (problem 12).
func TestRepeatedKeys(t *testing.T) {
	m := liveArena(t, 3)
	press(m, "]]")
	if m.slow != 2 {
		t.Fatalf("]] from 10: %g", m.slow)
	}
	press(m, "[[[[[[")
	if m.slow != 20 || m.ar.timing.TTL != 4*time.Second {
		t.Fatalf("[[[[[[: %g", m.slow)
	}
	for _, c := range []struct {
		cur    float64
		slower bool
		want   float64
	}{{7, true, 10}, {7, false, 5}, {50, true, 50}, {50, false, 20}, {1, false, 1}} {
		if got := nextSpeed(c.cur, c.slower); got != c.want {
			t.Errorf("nextSpeed(%g, %v) = %g, want %g", c.cur, c.slower, got, c.want)
		}
	}
}

// TestEscFromTheCodePane goes back where the learner came from (problem 13).
func TestEscFromTheCodePane(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "tab", "esc")
	if m.scr != scrPicker {
		t.Fatalf("picker → code → esc: screen %d", m.scr)
	}
	press(m, "enter", "tab")
	if m.scr != scrCode || !strings.Contains(m.View(), "esc back") {
		t.Fatalf("arena → code: screen %d", m.scr)
	}
	press(m, "esc")
	if m.scr != scrArena || m.ar == nil {
		t.Fatalf("arena → code → esc: screen %d", m.scr)
	}
}

// TestLearnerSharedStateSaid: a learner's lock with package-level state every simulated buyer
// shares (grading.Shared) is said so in the terminal lab: under the lock in the picker, and above
// the arena's lanes, as grade says it in the terminal and on the page.
func TestLearnerSharedStateSaid(t *testing.T) {
	base, err := catalog.Find("09")
	if err != nil {
		t.Fatal(err)
	}
	say := "package-level `holds` (written by Locker.Lock) is shared by every buyer here; in a deployment each process has its own — keep per-process state in the Locker"
	mine := course.LearnerStep("steps/mine", 1, base.New, base.Order, base.Source, []string{say})
	m := newModel(Options{offline: true, steps: append(slices.Clone(catalog.Steps), mine), Learner: mine, Shared: []string{say}})
	defer m.shutdown()
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press(m, "end")
	if m.steps[m.cur] != mine {
		t.Fatalf("end: %s, not the learner's lock", m.steps[m.cur].Slug)
	}
	flat := func(s string) string { return strings.Join(strings.Fields(ansi.Strip(s)), " ") }
	if v := flat(m.View()); !strings.Contains(v, "Note: package-level `holds` (written by Locker.Lock) is shared by every buyer here") {
		t.Errorf("the picker does not say the shared state:\n%s", m.View())
	}
	press(m, "enter")
	if v := flat(m.View()); !strings.Contains(v, "Note: package-level `holds`") {
		t.Errorf("the arena does not say the shared state:\n%s", m.View())
	}
}
