package tui

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// header is the top line of every screen: where the learner is, and at what pace.
func (m *model) header(w int) string {
	st := m.step()
	left := sTitle.Render("lockstep") + " " + sStep.Render(" "+m.stepLabel(st)+" ") + " "
	status := m.status(m.statusLevel(w))
	room := w - lipgloss.Width(left) - ansi.StringWidth(status) - 2
	if room < 12 { // no room for the pace: the lab's name, where the learner is, and the title cut short
		return ansi.Truncate(left+sBold.Render(st.Title), w, "…")
	}
	title := ansi.Truncate(st.Title, room, "…")
	return left + sBold.Render(title) + strings.Repeat(" ", room-ansi.StringWidth(title)+2) + sDim.Render(status)
}

// stepLabel is "Step 4/9", or a side road's slug.
func (m *model) stepLabel(st *steps.Step) string {
	switch {
	case m.isLearner(st):
		return "your lock"
	case !course.Numbered(st):
		return "side road: " + st.Slug
	}
	return fmt.Sprintf("Step %d/%d", st.Number, course.Last(m.steps))
}

// statusLevel is how short the status must be at width w: the first level at which the longest
// title and the widest status (every buyer there can be) fit. It depends on the width alone, so
// the pace is not said one way, then another, as the buyers or the screen change.
func (m *model) statusLevel(w int) int {
	title, label := 0, 0
	for _, st := range m.steps {
		title = max(title, ansi.StringWidth(st.Title))
		label = max(label, ansi.StringWidth(m.stepLabel(st)))
	}
	left := ansi.StringWidth("lockstep") + label + 4
	for short := 0; short < 2; short++ {
		if left+ansi.StringWidth(m.statusText(short, buyersText(MaxBuyers)))+2+title <= w {
			return short
		}
	}
	return 2
}

// status says the backend, the pace and the live buyers; short 1 leaves out the backend, short 2
// the TTL too.
func (m *model) status(short int) string {
	if m.drv != nil {
		return "drive · time stands still"
	}
	buyers := ""
	if m.ar != nil && m.ar.scenario == "" {
		buyers = buyersText(m.buyers)
	}
	return m.statusText(short, buyers)
}

// statusText is the status at level short, with buyers ("" for none) at its end.
func (m *model) statusText(short int, buyers string) string {
	be := m.opt.Backend
	if be == "" {
		be = "embedded"
	}
	pace := speedText(m.slow)
	if m.ar != nil && m.ar.prog != nil { // a recorded run: its own TTL and times, played slower
		pace = fmt.Sprintf("replayed %.3g× slower, recorded TTL %s", m.ar.prog.pace, roundDur(m.ar.prog.History.Timing.TTL))
	}
	parts := []string{be, pace}
	if short > 0 {
		parts = parts[1:]
	}
	if short > 1 {
		parts[0] = fmt.Sprintf("%g× slower", m.slow)
		if m.slow == 1 {
			parts[0] = "real pace"
		}
		if m.ar != nil && m.ar.prog != nil {
			parts[0] = fmt.Sprintf("replayed %.3g× slower", m.ar.prog.pace)
		}
	}
	if buyers != "" {
		parts = append(parts, buyers)
	}
	return strings.Join(parts, " · ")
}

// speeds are the slow-down factors [ and ] step through: 1 is the tests' pace (TTL 200 ms).
var speeds = []float64{1, 2, 5, 10, 20}

// setSpeed moves to slow-down factor to and restarts live buyers at that pace.
func (m *model) setSpeed(to float64, slower bool) tea.Cmd {
	if to == m.slow {
		m.msg = fmt.Sprintf("speed: %s is already the %s", speedText(m.slow), map[bool]string{true: "slowest", false: "fastest"}[slower])
		return nil
	}
	m.slow = to
	m.msg = fmt.Sprintf("speed: %s — the arena restarts at that pace", speedText(m.slow))
	if m.ar != nil && m.ar.prog != nil { // a found program: its run again, at the new pace
		return m.playProgram(m.ar.prog.Program)
	}
	if m.ar != nil && m.ar.scenario != "" {
		m.msg = fmt.Sprintf("speed: %s — press b to replay, r for live buyers", speedText(m.slow))
		return nil
	}
	return m.startLive()
}

// nextSpeed moves to the nearest level slower or faster than cur (a -speed between levels moves
// to the level next to it); past the last level that way it stays where it is.
func nextSpeed(cur float64, slower bool) float64 {
	if slower {
		for _, s := range speeds {
			if s > cur {
				return s
			}
		}
		return cur
	}
	for i := len(speeds) - 1; i >= 0; i-- {
		if speeds[i] < cur {
			return speeds[i]
		}
	}
	return cur
}

func speedText(slow float64) string {
	t := history.DefaultTiming().Scaled(slow)
	if slow == 1 {
		return fmt.Sprintf("real pace, TTL %s", roundDur(t.TTL))
	}
	return fmt.Sprintf("%g× slower, TTL %s", slow, roundDur(t.TTL))
}

func roundDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}
