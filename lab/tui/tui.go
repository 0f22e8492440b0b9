// Package tui is the terminal lab (Bubble Tea): the step picker, the arena where live buyers and
// the scenarios play, drive mode, the code pane and help, drawn from the arena's events with
// lab/picture's marks and lab/course's words. lab runs it on a terminal (Run) and lab serve one per
// SSH session (New). It starts sessions through internal/arena and internal/scenario and must not
// import lab/page or lab/serve. Hazard: every session runs on the wall clock (people watch it);
// only drive mode plays in virtual time, in the grader.
package tui

// The terminal lab, built of components the way soft-serve and gh-dash build Bubble Tea programs:
//
//   - model (this file) routes messages and owns the session: at most one at a time, live buyers
//     (arena.Live) or a canned scenario (scenario.Run in a goroutine), see session.go. Every session
//     has its own Redis and a generation number; messages of an older generation are dropped.
//   - the panes: picker.go, arenapane.go (shop, lock, invariants, log) with timeline.go,
//     codepane.go and helppane.go, each a component (SetSize, Update, View, KeyMap; its key map
//     in keys.go).
//     A pane starts and stops nothing: its Update returns an intent (intents.go) that the model
//     carries out in the same Update, so a key's effect shows in the next View.
//   - state is what the panes read and only the model writes: the steps, where the learner is,
//     the answer to the last key, the arena picture.
//   - arena.go, lane.go and verdict.go are the picture the events make; feed.go carries the
//     events to the program; source.go and diff.go feed the code pane.

import (
	"errors"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// Options configure the lab. Learner and Shared come from a lab built with the learner's lock
// laid over it (lab -dir); nil in the lab as shipped.
type Options struct {
	Backend string
	Slow    float64 // slow-down factor of history.DefaultTiming
	Buyers  int
	Stock   int
	Program *Program // a found program to play at the start (-program), or nil
	// Learner is the learner's step (the picker's last line), a lock with no row of the matrix
	// whose breaks the lab finds by playing; Shared is what its package-level state every buyer
	// shares says, a line each.
	Learner *steps.Step
	Shared  []string
	// Watch, when set, is told what the learner does that a trainer watching the room wants to
	// see (watch.go); lab serve sets it. Hazard: it is called on the program's goroutine, so it
	// must return at once.
	Watch func(Activity)
	// IdlePause, when set, holds the live buyers' new orders after this long without a key, and
	// stops the lab's clock, until the next key (idle.go).
	IdlePause time.Duration
	// Driver opens the grader's drive sessions (drive mode: m in the arena), building the grader
	// the first time; nil where there is none. Drive opens the lab in drive mode, on Step (a
	// number or slug; "" the first step).
	Driver  func() (*drive.Driver, error)
	Drive   bool
	Step    string
	offline bool          // tests: never open a backend
	steps   []*steps.Step // tests: another catalog (nil: catalog.Steps)
}

// MaxBuyers is the most live buyers the arena takes.
const MaxBuyers = 50

// Run runs the terminal lab on stdout until the learner quits, then stops its session. Hazard:
// it takes the terminal (the alternate screen); the caller checks the backend before, so a bad
// one fails before the screen changes.
func Run(o Options, stdout io.Writer) error {
	lab, stop := New(o)
	p := tea.NewProgram(lab, tea.WithAltScreen(), tea.WithOutput(stdout))
	_, err := p.Run()
	stop()
	if errors.Is(err, tea.ErrProgramPanic) {
		// Bubble Tea has restored the terminal and printed the trace.
		return errors.New("the lab panicked (trace above); the terminal was restored")
	}
	return err
}

// screen is which pane is on screen (help is shown over any of them).
type screen int

const (
	scrPicker screen = iota
	scrArena
	scrCode
)

// state is what the panes read. Only the model writes it.
type state struct {
	steps []*steps.Step
	cur   int    // index into steps
	msg   string // the answer to the last key
	ar    *board // the picture of the session on screen; nil when none
	// handoff, after a canned run broke a step, is where the lab sends the learner; it lasts
	// until the next session starts or the learner leaves the arena.
	handoff *course.Handoff
	paused  bool        // the live buyers' new orders are held
	typed   string      // a step number being typed (see digit)
	learner *steps.Step // the learner's own lock (lab -dir), or nil
	shared  []string    // what its package-level state every buyer shares says (Options.Shared)
	drv     *driveMode  // drive mode's session (drive.go), or nil
}

// isLearner tells whether st is the learner's own lock: a step with no row of the matrix, whose
// breaks the lab must find by playing.
func (s *state) isLearner(st *steps.Step) bool { return s.learner != nil && st == s.learner }

// step is the step the learner is on.
func (s *state) step() *steps.Step { return s.steps[s.cur] }

// model is the lab: it owns the session and the panes, and routes every message. Hazard: it is
// used from Bubble Tea's goroutine only; anything a Cmd does in the background comes back as a
// message.
type model struct {
	*state
	opt    Options
	scr    screen
	help   bool
	width  int
	height int
	slow   float64
	buyers int
	sess   *session
	gen    int
	bg     *sync.WaitGroup // sessions stopping in the background
	typing int             // the number of the latest digit typed, so a stale wait is dropped
	search searchTally     // what the search for a break of the learner's lock has seen
	quit   chan struct{}   // closed when the lab quits: a wait for a digit ends with it
	// after is the fault that hit a buyer, until the status line has said what came of it
	after *aftermath
	// pressed is a fault key just pressed, for the watcher (watch.go): "x crash", "b slow"
	pressed string
	// driver is the grader's end of drive mode, once made: kept until the lab quits
	driver *drive.Driver

	keys   globalKeys
	picker *picker
	arenaP *arenaPane
	code   *codePane
	helpP  *helpPane
}

// newModel makes the lab on the picker, at 100×30 until the terminal says its size.
func newModel(o Options) *model {
	if o.Slow == 0 {
		o.Slow = 10
	}
	if o.Buyers == 0 {
		o.Buyers = 5
	}
	if o.Stock == 0 {
		o.Stock = 100
	}
	st := &state{steps: o.steps, learner: o.Learner, shared: o.Shared}
	if st.steps == nil {
		st.steps = catalog.Steps
	}
	g := newGlobalKeys(st.steps)
	m := &model{state: st, opt: o, slow: o.Slow, buyers: o.Buyers, bg: &sync.WaitGroup{}, keys: g, quit: make(chan struct{}),
		picker: newPicker(st, g), arenaP: newArenaPane(st, g), code: newCodePane(st, g)}
	hk := newHelpKeys(g)
	m.helpP = newHelpPane(hk, []keyGroup{{"Everywhere", g}, {"Picker", m.picker.KeyMap()},
		{"Arena", m.arenaP.KeyMap()}, {"Drive mode (m in the arena)", newDriveKeys(g, 0)}, {"Code pane", m.code.KeyMap()}, {"Help", hk}})
	m.resize(100, 30)
	return m
}

// component is one pane of the lab (as soft-serve's pkg/ui has them): it lays itself out in the
// room it is given, answers a key with an intent (intents.go) that the model carries out, draws
// itself, and names its keys for ? and its footer. Hazard: a pane reads the state and writes
// only its own fields; it starts and stops nothing.
type component interface {
	SetSize(w, h int)
	Update(k tea.KeyMsg) tea.Msg
	View() string
	KeyMap() help.KeyMap
}

// panes are every pane, the help over them last.
func (m *model) panes() []component { return []component{m.picker, m.arenaP, m.code, m.helpP} }

// pane is the pane on screen: help over any of them, or the one the learner is on.
func (m *model) pane() component {
	switch {
	case m.help:
		return m.helpP
	case m.scr == scrPicker:
		return m.picker
	case m.scr == scrCode:
		return m.code
	}
	return m.arenaP
}

// resize gives every pane the room below the header line.
func (m *model) resize(w, h int) {
	m.width, m.height = w, h
	w, h = max(w, 20), max(h, 8)
	for _, p := range m.panes() {
		p.SetSize(w, h-1)
	}
}

// Init starts nothing, unless the lab opens on a found program (-program): the first session
// starts when the learner opens the arena.
func (m *model) Init() tea.Cmd {
	if m.opt.Program != nil {
		return m.playProgram(m.opt.Program)
	}
	if i := m.startStep(); i >= 0 {
		m.cur = i
		if !m.opt.Drive {
			return m.openArena()
		}
	}
	if m.opt.Drive {
		return m.startDrive()
	}
	return nil
}

// startStep is the index of the step the lab opens on (Options.Step), -1 for the picker's.
func (m *model) startStep() int {
	if m.opt.Step == "" {
		return -1
	}
	st, err := catalog.Find(m.opt.Step)
	if err != nil {
		return -1
	}
	return slices.Index(m.steps, st)
}

// Update routes one message: sizes to the panes, a session's feed and ticks to its picture,
// keys to key, and intents to intent.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.resize(msg.Width, msg.Height)
		return m, nil
	case feedMsg:
		return m, m.feedIn(msg)
	case tickMsg:
		return m, m.tickIn(msg)
	case searchMsg:
		return m, m.searchIn(msg)
	case injectMsg:
		m.injected(msg)
		return m, nil
	case driveMsg:
		return m, m.driveIn(msg)
	case typedMsg:
		if msg.seq == m.typing && m.typed != "" {
			return m, m.goTyped()
		}
		return m, nil
	case tea.KeyMsg:
		return m, m.key(msg)
	}
	return m, m.intent(msg)
}

// View is the header over the pane on screen, cut to the terminal so it never scrolls.
func (m *model) View() string {
	w, h := max(m.width, 20), max(m.height, 8)
	return fit(m.header(w)+"\n"+m.pane().View(), w, h)
}

// key routes a key: the keys of every screen first, then the pane on screen. The pane answers
// with an intent, carried out at once.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 {
		return m.runes(k.Runes)
	}
	g := m.keys
	if m.typed != "" && !key.Matches(k, g.Jump) {
		if k.Type == tea.KeyEnter {
			return m.goTyped()
		}
		m.typed, m.msg = "", "" // another key ends the number; it does what it always does
	}
	if m.drv != nil && m.scr == scrArena && !m.help {
		if cmd, ok := m.driveKey(k); ok {
			return cmd
		}
	}
	switch {
	case key.Matches(k, g.Quit):
		m.stopSession()
		select {
		case <-m.quit: // a second q before the first one's Quit arrived
		default:
			close(m.quit)
		}
		return tea.Quit
	case m.help:
		return m.intent(m.pane().Update(k))
	case key.Matches(k, g.Help):
		m.help = true
		m.helpP.Top()
		return nil
	case key.Matches(k, g.Prev):
		return m.setStep(m.cur - 1)
	case key.Matches(k, g.Next):
		return m.setStep(m.cur + 1)
	case key.Matches(k, g.Jump):
		return m.digit(k.Runes[0])
	case key.Matches(k, g.Break):
		m.scr = scrArena
		return m.startBreak()
	}
	return m.intent(m.pane().Update(k))
}

// runes handles several keys arriving as one message (a quick typist, a paste, tmux send-keys):
// each counts once, in order, and the arena restarts at most once for a change of speed.
func (m *model) runes(rs []rune) tea.Cmd {
	var cmds []tea.Cmd
	to, slower, speed := m.slow, false, false
	for _, r := range rs {
		if (r == '[' || r == ']') && m.scr == scrArena && !m.help && m.typed == "" {
			to, slower, speed = nextSpeed(to, r == '['), r == '[', true
			continue
		}
		cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}}))
	}
	if speed {
		cmds = append(cmds, m.setSpeed(to, slower))
	}
	return tea.Batch(cmds...)
}
