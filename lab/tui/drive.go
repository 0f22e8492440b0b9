package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// Drive mode in the terminal lab: the learner is the scheduler (internal/drive). m in the arena
// (or lab -drive) stops the live buyers and opens a drive session of the step in the grader, where
// time stands still: each buyer's next command waits in words on the screen, a number sends it, w
// lets a quarter TTL pass, the fault keys strike the chosen buyer, backspace undoes the last move
// (the session played again from its start with one move fewer), enter ends the session and has
// the referee judge it to the end, esc leaves. The grader's replies carry the history's new
// records; a referee here reads them, and the board draws its events as it draws a scenario's.

// driveMode is a drive session on screen, the model's: what the grader last said of it.
type driveMode struct {
	step   *steps.Step
	ch     catalog.Challenge
	hasCh  bool
	ref    *referee.Referee // reads the session's records for the board
	f      *drive.Frame     // the latest frame
	chosen int              // the buyer the fault keys strike (the last number pressed)
	said   []string         // what the last move did, in words
	busy   bool             // a request is with the grader
	queue  []driveAct       // keys pressed while it was
	// reached is the move the goal was reached at (0: not yet); atEnd: found as the session
	// ended (enter).
	reached int
	atEnd   bool
	ended   *referee.Report // the session's report, once enter ended it
}

// driveAct is one thing the learner asked of the session: a move, an undo, its end, or a hint.
// Acts are carried out in the order they were asked, each once the one before has its answer.
type driveAct struct {
	move            *drive.Move
	undo, end, hint bool
}

// driveMsg is the grader's answer to a request of generation gen: a driver made (d), a frame, a
// report, or an error (a bad move wraps drive.ErrBadMove).
type driveMsg struct {
	gen int
	d   *drive.Driver
	f   *drive.Frame
	rep *referee.Report
	err error
}

// startDrive stops any session and opens a drive session of the step: the grader first, if the
// lab has none yet.
func (m *model) startDrive() tea.Cmd {
	m.stopSession()
	m.handoff = nil
	m.scr = scrArena
	st := m.step()
	m.drv = &driveMode{step: st, chosen: 1}
	m.drv.ch, m.drv.hasCh = catalog.ChallengeOf(st.Slug)
	m.ar = m.driveBoard(nil)
	gen := m.gen
	if m.driver != nil {
		m.msg = "drive mode: time stands still"
		return m.driveAsk(driveAct{}, true)
	}
	if m.opt.Driver == nil {
		m.msg = "drive mode plays in the grader, in virtual time: this lab has none (the embedded backend, in lockstep's folder, builds one)"
		return nil
	}
	m.msg = "drive mode: building the grader, where time can stand still (go test -c; the first time takes a while)…"
	m.drv.busy = true
	open := m.opt.Driver
	return func() tea.Msg {
		d, err := open()
		return driveMsg{gen: gen, d: d, err: err}
	}
}

// driveBoard is an empty board for the drive session whose header h says (nil: before the
// grader has said it).
func (m *model) driveBoard(h *history.History) *board {
	st, t, stock, nodes := m.drv.step, history.DefaultTiming(), 3, max(m.drv.step.Nodes, 1)
	if h != nil {
		t, stock, nodes = h.Timing, h.Stock, max(len(h.Nodes), 1)
	}
	b := newArena(drive.Scenario, t, stock, arena.LockName, true, nodes)
	if course.TakesNoLock(st) {
		b.takesNoLock()
	}
	return b
}

// driveAsk sends act to the grader (open: the session again from its start, with the moves so
// far, or one fewer for an undo).
func (m *model) driveAsk(act driveAct, open bool) tea.Cmd {
	dm := m.drv
	dm.busy = true
	d, gen, slug := m.driver, m.gen, dm.step.Slug
	var moves []drive.Move
	if dm.f != nil {
		moves = dm.f.Moves
	}
	switch {
	case act.undo:
		moves, open = moves[:len(moves)-1], true
		dm.ended = nil
	case act.end:
		return func() tea.Msg {
			rep, err := d.End()
			return driveMsg{gen: gen, rep: rep, err: err}
		}
	case dm.ended != nil: // a move after the end: the session again up to it, then the move
		moves, open = append(slices.Clone(moves), *act.move), true
		dm.ended = nil
	}
	return func() tea.Msg {
		var f *drive.Frame
		var err error
		if open {
			f, err = d.Open(drive.Opening{Step: slug, Moves: moves})
		} else {
			f, err = d.Move(*act.move)
		}
		return driveMsg{gen: gen, f: f, err: err}
	}
}

// driveIn takes the grader's answer.
func (m *model) driveIn(msg driveMsg) tea.Cmd {
	dm := m.drv
	if msg.gen != m.gen || dm == nil {
		if msg.d != nil && m.driver == nil { // the grader came after the learner left: keep it
			m.driver = msg.d
		}
		return nil
	}
	dm.busy = false
	switch {
	case msg.d != nil:
		m.driver = msg.d
		m.msg = "drive mode: time stands still"
		return m.driveAsk(driveAct{}, true)
	case errors.Is(msg.err, drive.ErrBadMove):
		m.msg = oneLine(msg.err.Error())
	case msg.err != nil:
		m.msg = "drive mode stopped: " + oneLine(msg.err.Error())
		dm.queue = nil
		if errors.Is(msg.err, drive.ErrStopped) && m.driver != nil { // m starts a grader afresh
			d := m.driver
			m.driver = nil
			m.bg.Add(1)
			go func() {
				defer m.bg.Done()
				d.Close()
			}()
		}
		return nil
	case msg.rep != nil:
		dm.ended = msg.rep
		m.ar.finish(msg.rep, nil)
		m.driveGoal(msg.rep.Violations)
		if dm.reached == 0 {
			m.msg = "the session is over, judged to its end: " + course.Verdict(msg.rep.Violations, msg.rep.Unjudged) + " (backspace takes it back up to the last move)"
		}
	case msg.f != nil:
		m.driveFrame(msg.f)
	}
	return m.driveNext()
}

// driveNext carries out the acts asked while the grader was busy, up to the next one that asks it
// something.
func (m *model) driveNext() tea.Cmd {
	dm := m.drv
	for len(dm.queue) > 0 && !dm.busy {
		next := dm.queue[0]
		dm.queue = dm.queue[1:]
		if cmd := m.driveDo(next); cmd != nil {
			return cmd
		}
	}
	return nil
}

// driveFrame draws a frame: after an opening the board anew from its header, then its records.
func (m *model) driveFrame(f *drive.Frame) {
	dm := m.drv
	if f.Header != nil {
		m.ar = m.driveBoard(f.Header)
		dm.ref = referee.NewReferee(*f.Header, m.ar.apply)
		dm.reached, dm.atEnd = 0, false
		m.handoff = nil
	}
	for _, r := range f.Records {
		dm.ref.Add(r)
	}
	m.ar.advance(f.At)
	m.ar.zoomed = 0 // the run grew: fit it again
	dm.f = f
	dm.said = nil
	if n := len(f.Said); n > 0 && f.Header == nil {
		dm.said = f.Said[n-1]
	}
	m.msg = ""
	if len(dm.said) > 0 {
		m.msg = driveSaid(len(f.Moves), dm.said)
	}
	var kinds []steps.Kind
	for _, fd := range f.Found {
		kinds = append(kinds, fd.Kind)
	}
	m.driveGoal(kinds)
}

// driveSaid is move n and what came of it, in one line.
func driveSaid(n int, said []string) string {
	s := fmt.Sprintf("%d. %s", n, said[0])
	if len(said) > 1 {
		s += " → " + strings.Join(said[1:], "; ")
	}
	return s
}

// driveGoal checks the challenge against the kinds the referee has found, and on reaching it
// works out the step that fixes it.
func (m *model) driveGoal(found []steps.Kind) {
	dm := m.drv
	if !dm.hasCh || dm.ch.Holds || dm.reached > 0 || !slices.Contains(found, dm.ch.Goal) {
		return
	}
	dm.reached = len(dm.f.Moves)
	if dm.f.Found != nil {
		for _, fd := range dm.f.Found {
			if fd.Kind == dm.ch.Goal {
				dm.reached = fd.Move
			}
		}
	}
	dm.atEnd = dm.ended != nil
	if i := slices.Index(m.steps, dm.step); i >= 0 {
		m.handoff = course.NewHandoff(m.steps, i, dm.ch.Scenario, []steps.Kind{dm.ch.Goal}, m.learner)
	}
}

// driveAct takes one act of the learner's: at once, or after those asked before it.
func (m *model) driveAct(act driveAct) tea.Cmd {
	dm := m.drv
	dm.queue = append(dm.queue, act)
	if dm.busy || dm.f == nil {
		return nil
	}
	return m.driveNext()
}

// driveDo carries out one act: what asks the grader returns its request.
func (m *model) driveDo(act driveAct) tea.Cmd {
	dm := m.drv
	switch {
	case act.hint:
		m.msg = m.driveHint()
		return nil
	case act.undo:
		if dm.f == nil || len(dm.f.Moves) == 0 {
			m.msg = "nothing to undo: no move played yet"
			return nil
		}
		m.msg = "undo: the session again from its start, one move fewer…"
	case act.end && dm.ended != nil:
		m.msg = "the session is over already (backspace takes it back)"
		return nil
	case act.end:
		m.msg = "ending the session: what is on its way arrives, and the referee judges it to the end…"
	}
	return m.driveAsk(act, false)
}

// driveKey is a key in drive mode: true when it was drive mode's.
func (m *model) driveKey(k tea.KeyMsg) (tea.Cmd, bool) {
	dm := m.drv
	s := k.String()
	switch {
	case s == "esc":
		return m.leaveDrive(), true
	case s == "backspace":
		return m.driveAct(driveAct{undo: true}), true
	case s == "enter":
		return m.driveAct(driveAct{end: true}), true
	case s == "h":
		return m.driveAct(driveAct{hint: true}), true
	case s == "g" && m.handoff != nil && m.handoff.Fix >= 0:
		return m.setStep(m.handoff.Fix), true
	case s == "tab" || s == "c" || s == "?" || s == "q" || s == "ctrl+c" || s == "left" || s == "right":
		return nil, false
	}
	mv, err := drive.ParseKey(s, dm.chosen)
	if err != nil {
		if len(s) == 1 {
			m.msg = fmt.Sprintf("%q is no key of drive mode: 1-9 send a buyer's next command, w lets time pass, + and k bring a buyer, %s strike buyer %d (? for all)", s, faultKeyList(), dm.chosen)
		}
		return nil, true
	}
	if n := mv.Buyer; n > 0 && (mv.Fault() == nil) {
		dm.chosen = n
	}
	return m.driveAct(driveAct{move: &mv}), true
}

// faultKeyList is the fault keys, as the footer lists them.
func faultKeyList() string {
	var ks []string
	for _, f := range newArenaKeys(globalKeys{}).faults {
		ks = append(ks, f.sc.Key)
	}
	return strings.Join(ks, " ")
}

// driveHint is the par solution's next move, if the moves so far are its start.
func (m *model) driveHint() string {
	dm := m.drv
	if !dm.hasCh {
		return "no challenge for this lock: drive it as you like"
	}
	sol, _ := drive.Parse(dm.ch.Solution)
	var done []drive.Move
	if dm.f != nil {
		done = dm.f.Moves
	}
	for i, mv := range done {
		if i >= len(sol) || sol[i] != mv {
			return fmt.Sprintf("hint: the par solution is %s — yours left it at move %d (backspace back to move %d)", dm.ch.Solution, i+1, i)
		}
	}
	if len(done) >= len(sol) {
		if dm.ended == nil {
			return fmt.Sprintf("hint: that is the whole par solution (%s): press enter to end the session and let the referee judge it to the end", dm.ch.Solution)
		}
		return "hint: the par solution is played and judged"
	}
	next := sol[len(done)]
	key := next.Key
	if next.Fault() != nil {
		key = fmt.Sprintf("%s (on buyer %d)", next.Key, next.Buyer)
	}
	return fmt.Sprintf("hint: next, %s — the par solution: %s", key, dm.ch.Solution)
}

// leaveDrive ends drive mode: live buyers again.
func (m *model) leaveDrive() tea.Cmd {
	m.drv = nil
	m.gen++
	m.msg = "drive mode off: live buyers"
	return m.startLive()
}
