package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/muesli/termenv"
)

// newLab is the lab as New makes it, on a clock the test moves.
func newLab(o Options) (*lab, *time.Time) {
	m, _ := New(o)
	l := m.(*lab)
	now := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	l.Init()
	return l, &now
}

func send(l *lab, msgs ...tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	for _, msg := range msgs {
		_, cmd = l.Update(msg)
	}
	return cmd
}

// A frame is drawn only after a message, at most once a frameGap unless the message is a key,
// and what came too soon is drawn by a redraw the lab asks for.
func TestFramesOnlyWhenSomethingChanged(t *testing.T) {
	l, now := newLab(Options{offline: true})
	defer l.shutdown()
	first := l.View()
	l.m.msg = "changed behind the lab's back"
	if l.View() != first {
		t.Fatal("a View with no message since the last frame drew a new one")
	}
	*now = now.Add(frameGap / 5)
	cmd := send(l, tickMsg{gen: -1}) // a message that changes nothing on screen, too soon
	if l.View() != first {
		t.Fatal("a message within frameGap of the last frame was drawn at once")
	}
	if cmd == nil {
		t.Fatal("no redraw asked for what came too soon")
	}
	start := time.Now()
	if msg := cmd(); msg != (redrawMsg{}) {
		t.Fatalf("the redraw command returned %#v", msg)
	} else if waited := time.Since(start); waited < frameGap*4/5-time.Millisecond {
		t.Errorf("the redraw came after %v, before the rest of frameGap (%v)", waited, frameGap*4/5)
	}
	if send(l, tickMsg{gen: -1}) != nil {
		t.Error("a second redraw was asked for while one was on its way")
	}
	*now = now.Add(frameGap)
	send(l, redrawMsg{})
	if v := l.View(); !strings.Contains(v, "changed behind") {
		t.Fatal("the redraw did not draw what had come")
	}
	*now = now.Add(time.Millisecond)
	if send(l, keyMsg("right")) != nil {
		t.Error("a key asked for a redraw")
	}
	if !strings.Contains(l.View(), "Step 2/") {
		t.Fatal("a key within frameGap of the last frame was not drawn at once")
	}
}

// paint writes what Render writes, for the texts the footer gives it, in 256 colours too.
func TestPaintIsRender(t *testing.T) {
	r := lipgloss.NewRenderer(nil, termenv.WithProfile(termenv.ANSI256))
	for _, st := range []lipgloss.Style{r.NewStyle().Bold(true).Foreground(lipgloss.Color("252")), r.NewStyle().Foreground(lipgloss.Color("245"))} {
		for _, s := range []string{"x", "tab/c", "hold orders", "←/→"} {
			if got, want := paint(&st, s), st.Render(s); got != want {
				t.Errorf("paint(%q) = %q, Render %q", s, got, want)
			}
		}
	}
}

// The watcher tells where the learner is when it changes, each fault key pressed, and each kind
// seen break, once a step.
func TestWatchTellsTheRoom(t *testing.T) {
	var told []Activity
	l, _ := newLab(Options{Watch: func(a Activity) { told = append(told, a) }})
	defer l.shutdown()
	send(l, keyMsg("4"))
	if want := (Activity{Step: "04_atomic_ttl", Screen: "picker"}); len(told) != 1 || told[0] != want {
		t.Fatalf("after 4 the room was told %+v, want %+v", told, want)
	}
	send(l, keyMsg("enter"), keyMsg("x"))
	if n := len(told); n < 2 || told[n-2].Screen != "arena" || told[n-1].Fault != "x crash" {
		t.Fatalf("after enter and x the room was told %+v", told)
	}
	told = nil
	l.m.stopSession()
	loadRecorded(t, l.m) // a run of 04 under slow that broke it
	send(l, tickMsg{gen: -1}, tickMsg{gen: -1})
	var broke []steps.Kind
	for _, a := range told {
		if a.Broke != "" {
			if a.Step != "04_atomic_ttl" {
				t.Errorf("a break told on %s", a.Step)
			}
			broke = append(broke, a.Broke)
		}
	}
	slices.Sort(broke)
	if want := []steps.Kind{steps.ForeignRelease, steps.Overlap, steps.Oversold}; !slices.Equal(broke, want) {
		t.Errorf("breaks told %v, want each of %v once", broke, want)
	}
}

// After IdlePause without a key the live buyers are held and the clock's ticks stop, the room is
// told, and the next key brings the lab back and does nothing else.
func TestIdleHoldsTheBuyers(t *testing.T) {
	var told []Activity
	l, now := newLab(Options{IdlePause: time.Minute, Watch: func(a Activity) { told = append(told, a) }})
	defer l.shutdown()
	send(l, keyMsg("4"), keyMsg("enter"))
	live := l.m.sess.live
	*now = now.Add(time.Minute - time.Millisecond)
	if send(l, tickMsg{gen: l.m.gen}) == nil || live.Paused() {
		t.Fatal("held before IdlePause")
	}
	*now = now.Add(time.Millisecond)
	if send(l, tickMsg{gen: l.m.gen}) != nil {
		t.Error("a tick was asked for while held")
	}
	if !live.Paused() || !strings.Contains(l.m.msg, "held: no key for 1m,") || !told[len(told)-1].Away {
		t.Fatalf("not held after IdlePause: paused %v, msg %q, told %+v", live.Paused(), l.m.msg, told[len(told)-1])
	}
	if cmd := send(l, keyMsg("x")); cmd == nil {
		t.Error("coming back asked for no tick")
	}
	if live.Paused() || !strings.HasPrefix(l.m.msg, "welcome back") || l.m.scr != scrArena || told[len(told)-1].Away {
		t.Fatalf("not back after a key: paused %v, msg %q, told %+v", live.Paused(), l.m.msg, told[len(told)-1])
	}
	if slices.ContainsFunc(told, func(a Activity) bool { return a.Fault != "" }) {
		t.Error("the key that brought the lab back also pressed its fault")
	}
}
