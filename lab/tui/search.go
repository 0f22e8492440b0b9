package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// b on a lock whose row of the matrix nobody wrote (the learner's own, lab -dir): the search for a
// scenario that breaks it, the scenarios played one after another.

// searchMsg is one scenario a search played against a lock with no row of the matrix.
type searchMsg struct {
	gen int
	i   int // the scenario's index in scenario.Names()
	rep *referee.Report
	err error
}

// startSearch looks for a scenario that breaks a lock whose row of the matrix nobody wrote (the
// learner's own): it plays the scenarios one after another at full speed, on the wall clock, until
// one breaks it, then plays that one in the arena at the lab's pace. Hazard: a wall-clock verdict
// can move with load; the arena's play says so if it holds ("held this time"), and lab grade, in
// virtual time, is the verdict that does not move.
func (m *model) startSearch() tea.Cmd {
	m.stopSession()
	m.handoff, m.ar, m.search = nil, nil, searchTally{}
	ctx, cancel := context.WithCancel(context.Background())
	m.sess = &session{gen: m.gen, cancel: cancel, ctx: ctx, start: time.Now()}
	return m.searchNext(0)
}

// searchTally is what a search has seen so far.
type searchTally struct {
	held, unstaged, unjudged []string
}

// searchNext plays scenario i of the search in the background.
func (m *model) searchNext(i int) tea.Cmd {
	s, st, backend, sc := m.sess, m.step(), m.opt.Backend, scenario.Names()[i]
	m.msg = fmt.Sprintf("looking for a scenario that breaks %s: playing %s at full speed (%d of %d)…", course.Name(st), sc, i+1, len(scenario.Names()))
	return func() (msg tea.Msg) {
		s.mu.Lock()
		if s.stopped { // the lab moved on before this scenario began
			s.mu.Unlock()
			return nil
		}
		s.wg.Add(1)
		s.mu.Unlock()
		defer s.wg.Done()
		out := searchMsg{gen: s.gen, i: i}
		defer func() {
			if r := recover(); r != nil {
				out.err = fmt.Errorf("the scenario panicked: %v", r)
			}
			msg = out
		}()
		env, err := redisenv.Open(backend, redisenv.Options{Nodes: st.Nodes})
		if err != nil {
			out.err = err
			return
		}
		defer env.Close()
		out.rep, out.err = scenario.Run(s.ctx, arena.Config{Step: st, Env: env}, sc)
		return
	}
}

// searchIn takes one scenario of a search: a break is played in the arena; anything else goes on
// to the next scenario, and after the last the lab says what it found.
func (m *model) searchIn(msg searchMsg) tea.Cmd {
	if msg.gen != m.gen || m.sess == nil {
		return nil
	}
	sc, t := scenario.Names()[msg.i], &m.search
	switch {
	case errors.Is(msg.err, arena.ErrCannotStage):
		t.unstaged = append(t.unstaged, string(sc))
	case msg.err != nil:
		m.msg = fmt.Sprintf("the search stopped at %s: %s", sc, oneLine(msg.err.Error()))
		return nil
	case len(msg.rep.Violations) > 0:
		cmd := m.playBreak(sc)
		after := ""
		if len(t.held) > 0 {
			after = " after it held under " + course.Count(len(t.held), "scenario", "scenarios")
		}
		m.msg = fmt.Sprintf("%s breaks under %s (%s), played at full speed%s; here it is at the lab's pace…", course.Name(m.step()), sc, course.KindList(msg.rep.Violations), after)
		return cmd
	case !msg.rep.Complete():
		t.unjudged = append(t.unjudged, string(sc))
	default:
		t.held = append(t.held, string(sc))
	}
	if msg.i+1 < len(scenario.Names()) {
		return m.searchNext(msg.i + 1)
	}
	m.msg = fmt.Sprintf("%s held under %s played at full speed", course.Name(m.step()), course.Count(len(t.held), "scenario", "scenarios"))
	if len(t.unjudged) > 0 {
		m.msg += "; no verdict under " + strings.Join(t.unjudged, ", ")
	}
	if len(t.unstaged) > 0 {
		m.msg += "; this backend cannot stage " + strings.Join(t.unstaged, ", ")
	}
	m.msg += " — lab grade gives its row in virtual time, the same on any machine"
	return nil
}
