package tui

import (
	"fmt"
	"strconv"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// Intents are what a pane asks the model to do. A pane never starts or stops a session itself:
// the session is the model's.
type (
	goStep      struct{ i int }                 // move to step index i
	openArena   struct{ clearMsg bool }         // show the arena, starting live buyers if none run
	openCode    struct{ from screen }           // show the code pane; esc goes back to from
	showPicker  struct{}                        // show the picker; a session on screen goes on
	leaveArena  struct{}                        // back to the picker: the session stops
	closeHelp   struct{}                        // leave the help screen
	resetArena  struct{}                        // a fresh Redis and live buyers
	changeSpeed struct{ slower bool }           // one speed level slower or faster
	holdOrders  struct{}                        // pause or resume new orders
	addBuyers   struct{ n int }                 // n more (or, negative, fewer) live buyers
	injectFault struct{ sc *scenario.Scenario } // play scenario sc's move on the live holder
	startDrive  struct{}                        // drive mode: the learner schedules every command
)

// intent carries out in (nil does nothing; any other message is not an intent and is ignored).
func (m *model) intent(in tea.Msg) tea.Cmd {
	switch in := in.(type) {
	case goStep:
		return m.setStep(in.i)
	case openArena:
		if in.clearMsg {
			m.msg = ""
		}
		return m.openArena()
	case openCode:
		m.scr = scrCode
		m.code.from = in.from
	case showPicker:
		m.scr = scrPicker
	case leaveArena:
		m.scr, m.msg, m.handoff, m.drv = scrPicker, "", nil, nil
		m.stopSession()
		m.ar = nil
	case closeHelp:
		m.help = false
	case resetArena:
		m.msg = "reset: a fresh Redis, the shelf restocked"
		return m.startLive()
	case changeSpeed:
		return m.setSpeed(nextSpeed(m.slow, in.slower), in.slower)
	case rewindMove:
		m.rewindTo(in)
	case holdOrders:
		if m.ar != nil && m.ar.scenario != "" && m.ar.leaveRewind() {
			m.msg = "rewind off"
			return nil
		}
		return m.liveIntent(in)
	case addBuyers, injectFault:
		return m.liveIntent(in)
	case startDrive:
		return m.startDrive()
	}
	return nil
}

// setStep moves to step i; the arena restarts with live buyers if it is on screen. After a break,
// the next step and the fix open in the code pane, headed by what they clear.
func (m *model) setStep(i int) tea.Cmd {
	if i < 0 || i >= len(m.steps) {
		return nil
	}
	if i != m.cur {
		m.stopSession()
		m.ar = nil
		m.msg = ""
	}
	m.cur = i
	if h := m.handoff; h != nil && m.scr != scrPicker && i != h.From && (i == h.Next || i == h.Fix || i == h.Part || i == h.Base) {
		m.scr, m.code.from, m.code.diff = scrCode, scrArena, true
		m.msg = h.CodeNote(m.steps, i)
		return nil
	}
	if m.scr == scrArena && m.sess == nil && m.ar == nil {
		return m.openArena()
	}
	return nil
}

// openArena shows the arena, starting live buyers if nothing runs yet.
func (m *model) openArena() tea.Cmd {
	m.scr = scrArena
	switch {
	case m.ar == nil && m.drv != nil:
		return m.startDrive()
	case m.ar == nil:
		return m.startLive()
	}
	return nil
}

// typeWait is how long a step number that could go on (1, with steps 10–17) waits for its next
// digit before it is taken as it is.
const typeWait = 1200 * time.Millisecond

// typedMsg ends the wait for the digit typed as number seq.
type typedMsg struct{ seq int }

// digit takes one digit of a step number. A number that no longer step number starts with is
// taken at once; one that could go on waits for the next digit, enter, or typeWait.
func (m *model) digit(r rune) tea.Cmd {
	m.typed += string(r)
	if !course.Extends(m.steps, m.typed) {
		return m.goTyped()
	}
	m.typing++
	seq := m.typing
	m.msg = fmt.Sprintf("step %s… — type the next digit, or enter for step %s", m.typed, m.typed)
	if course.ByNumber(m.steps, atoi(m.typed)) < 0 {
		m.msg = fmt.Sprintf("step %s… — type the next digit", m.typed)
	}
	quit := m.quit
	return func() tea.Msg {
		t := time.NewTimer(typeWait)
		defer t.Stop()
		select {
		case <-t.C:
			return typedMsg{seq}
		case <-quit: // the lab is gone: nobody waits for the digit
			return nil
		}
	}
}

// goTyped goes to the step whose number was typed.
func (m *model) goTyped() tea.Cmd {
	n := atoi(m.typed)
	m.typed, m.msg = "", ""
	i := course.ByNumber(m.steps, n)
	if i < 0 {
		m.msg = fmt.Sprintf("there is no step %d: the steps are 1–%d", n, course.Last(m.steps))
		return nil
	}
	return m.setStep(i)
}

// atoi is the number typed digits make (they are digits, so there is no error to see).
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
