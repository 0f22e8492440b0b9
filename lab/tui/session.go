package tui

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// session is one arena the lab is watching: live buyers, or a canned scenario.
type session struct {
	gen    int
	env    redisenv.Env
	live   *arena.Live
	feed   *feed
	cancel context.CancelFunc // a canned run
	ran    chan struct{}      // closed when the canned run returned
	ctx    context.Context    // a search's: cancel ends it
	wg     sync.WaitGroup     // a search's scenario under way
	start  time.Time
	// pace, for a program's replay, is wall time per recorded time: now is the recorded clock
	pace float64

	// a canned run's arena, from arena.Config.OnArena until arena.Run returns: the lock is read
	// from it as a live session's is. Hazard: never kept past the run (OnArena's rule); mu
	// also keeps the run from ending while a reading is under way.
	mu      sync.Mutex
	board   *arena.Arena
	stopped bool // stop has begun: no fault may reach the live buyers any more
}

// setArena is OnArena: the canned run's arena, or nil once the run is over.
func (s *session) setArena(a *arena.Arena) {
	s.mu.Lock()
	s.board = a
	if a != nil {
		s.start = time.Now().Add(-a.Since()) // the arena's clock, not the lab's
	}
	s.mu.Unlock()
	if a != nil && a.Play() > 0 && s.feed != nil {
		s.feed.pushPlay(a.Play())
	}
}

// readLock reads the lock of a canned run's arena while the run is on; false when there is none.
func (s *session) readLock(ctx context.Context, r *lockReading, quorum bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.board == nil {
		return false
	}
	r.read(ctx, s.board, quorum)
	return true
}

// stop ends everything the session started; it may block (orders finishing), so the model runs
// it in the background.
func (s *session) stop() {
	if s.live != nil {
		s.live.Halt() // a key waiting for the orders under way (the failover's) stops waiting
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	if s.cancel != nil {
		s.cancel()
		if s.ran != nil {
			<-s.ran
		}
		s.wg.Wait()
	}
	if s.live != nil {
		s.live.Stop()
	}
	if s.env != nil {
		s.env.Close()
	}
	if s.feed != nil {
		s.feed.close()
	}
}

// now is the session's clock, as its events' At count it: its arena's, from the moment the arena
// started it.
func (s *session) now() time.Duration {
	if s.live != nil {
		return s.live.Arena().Since()
	}
	if s.pace > 0 {
		return time.Duration(float64(time.Since(s.start)) / s.pace)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Since(s.start)
}

// tickMsg moves the picture's clock; the reading it took went into the feed.
type tickMsg struct{ gen int }

// tick reads the lock every so often (its TTL is Redis's to tell) into the feed, and moves the
// timeline's clock. The reading is the arena's (owner, value and TTL of one moment), from the live
// session's arena or the canned run's; a run that has not begun or is over is not read.
func (m *model) tick() tea.Cmd {
	s := m.sess
	if s == nil {
		return nil
	}
	quorum := m.ar != nil && m.ar.multi()
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		r := lockReading{at: s.now()}
		if s.live != nil {
			r.read(ctx, s.live.Arena(), quorum)
		} else if !s.readLock(ctx, &r, quorum) {
			return tickMsg{gen: s.gen}
		}
		s.feed.pushLock(r)
		return tickMsg{gen: s.gen}
	})
}

// stopSession hands the current session to the background to stop.
func (m *model) stopSession() {
	s := m.sess
	m.sess = nil
	m.gen++
	m.paused = false
	if s == nil {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		s.stop()
	}()
}

// shutdown stops the session and waits for everything the lab started to end (drive mode's
// grader too).
func (m *model) shutdown() {
	m.stopSession()
	m.bg.Wait()
	if m.driver != nil {
		m.driver.Close()
	}
}

// timing is the arena's clock at the lab's speed.
func (m *model) timing() history.Timing { return history.DefaultTiming().Scaled(m.slow) }

// prepareArena sets up the screen's arena for scenario ("" for live buyers) and opens a fresh
// backend and event feed for it. It returns a nil Env when there is nothing to run: offline, or
// Redis could not start (m.msg then says why).
func (m *model) prepareArena(scenario steps.Scenario, t history.Timing, stock int) (redisenv.Env, *feed) {
	m.ar = newArena(scenario, t, stock, arena.LockName, true, m.step().Nodes)
	if course.TakesNoLock(m.step()) {
		m.ar.takesNoLock()
	}
	if m.opt.offline {
		return nil, nil
	}
	env, err := redisenv.Open(m.opt.Backend, redisenv.Options{Nodes: m.step().Nodes})
	if err != nil {
		m.msg = "cannot start Redis: " + err.Error()
		return nil, nil
	}
	m.ar.lockKey, m.ar.canFail = env.Prefix()+arena.LockName, env.Nodes()[0].CanFailover()
	return env, newFeed(m.gen)
}

// startLive stops any session and starts live buyers on a fresh backend for the current step.
func (m *model) startLive() tea.Cmd {
	m.stopSession()
	m.handoff = nil
	t := m.timing()
	env, f := m.prepareArena("", t, m.opt.Stock)
	if env == nil {
		return nil
	}
	live, err := arena.StartLive(arena.Config{Step: m.step(), Env: env, Timing: t, Stock: m.opt.Stock, OnEvent: f.push}, m.buyers)
	if err != nil {
		env.Close()
		m.msg = "cannot start the arena: " + err.Error()
		return nil
	}
	m.ar.roster.sync(live.Active())
	m.sess = &session{gen: m.gen, env: env, live: live, feed: f, start: time.Now()}
	return tea.Batch(f.next(), m.tick())
}

// startBreak stops any session and plays the step's breaking scenario on a fresh backend. A lock
// whose row of the matrix nobody wrote (the learner's own) is searched for one first.
func (m *model) startBreak() tea.Cmd {
	st := m.step()
	m.pressed = strings.TrimSpace("b " + string(st.BreakWith))
	switch {
	case m.isLearner(st):
		return m.startSearch()
	case st.BreakWith == "":
		var cmd tea.Cmd
		if m.ar == nil { // from the picker: live buyers show that it holds
			cmd = m.startLive()
		}
		m.msg = unbreakable(st)
		return cmd
	}
	return m.playBreak(st.BreakWith)
}

// playBreak stops any session and plays sc against the step on a fresh backend, at the lab's pace.
func (m *model) playBreak(sc steps.Scenario) tea.Cmd {
	st := m.step()
	m.stopSession()
	m.handoff = nil
	t := m.timing()
	m.msg = fmt.Sprintf("breaking %s…", course.Name(st))
	env, f := m.prepareArena(sc, t, -1)
	if env == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{gen: m.gen, env: env, feed: f, cancel: cancel, ran: make(chan struct{}), start: time.Now()}
	m.sess = s
	go func() {
		defer close(s.ran)
		var rep *referee.Report
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("the scenario panicked: %v\n%s", r, debug.Stack())
			}
			f.finish(rep, err)
		}()
		rep, err = scenario.Run(ctx, arena.Config{Step: st, Env: env, Timing: t, OnEvent: f.push, OnArena: s.setArena}, sc)
		s.setArena(nil)
	}()
	return tea.Batch(f.next(), m.tick())
}

// feedIn folds a batch of the session's events into the picture and reads the feed again.
func (m *model) feedIn(msg feedMsg) tea.Cmd {
	if msg.gen != m.gen || m.ar == nil {
		return nil
	}
	was := m.ar.failedOver
	for _, it := range msg.items {
		if it.play > 0 {
			if it.play > 1 || m.ar.last > 0 {
				m.ar = m.ar.fresh()
			}
			m.ar.play = it.play
			continue
		}
		if it.lock != nil {
			m.ar.setLock(*it.lock)
		} else {
			m.ar.apply(it.ev)
			m.follow(it.ev)
		}
	}
	if !was && m.ar.failedOver && m.ar.scenario == "" {
		m.msg = "failed over: the primary died before the lock write reached the replica, which is primary now"
	}
	m.ar.drops += msg.drops
	if msg.done {
		if m.sess != nil && m.sess.cancel != nil {
			m.finishBreak(msg.rep, msg.err)
		}
		return nil
	}
	return m.sess.feed.next()
}

// tickIn moves the picture's clock. (Stuck is judged live by the referee: an EvViolation.)
func (m *model) tickIn(msg tickMsg) tea.Cmd {
	if msg.gen != m.gen || m.sess == nil || m.ar == nil {
		return nil
	}
	if !m.ar.done {
		m.ar.advance(m.sess.now())
	}
	return m.tick()
}

// finishBreak takes a canned run's report, and after a break works out the hand-off.
func (m *model) finishBreak(rep *referee.Report, err error) {
	if rep != nil && rep.Plays > 1 && rep.History != nil && rep.History.Play != m.ar.play {
		// The verdict's play is not the last one drawn: draw it again, from its history.
		b := m.ar.fresh()
		b.play = rep.History.Play
		ref := referee.NewReferee(*rep.History, b.apply)
		for _, rec := range rep.History.Records {
			ref.Add(rec)
		}
		m.ar = b
	}
	if rep != nil {
		m.ar.plays = rep.Plays
	}
	m.ar.finish(rep, err)
	if p := m.ar.prog; p != nil { // an explored program: no step's row says what clears it
		m.msg = p.verdict(rep, err)
		return
	}
	st := m.step()
	switch {
	case err != nil:
		m.msg = "the scenario failed: " + err.Error()
	case len(rep.Violations) > 0:
		// a learner's lock has no row here: its way on starts from the step its source is nearest
		m.handoff = course.NewHandoffNear(m.steps, m.cur, m.ar.scenario, rep.Violations, m.learner, course.NearestBySource(m.steps, m.learner))
		m.msg = fmt.Sprintf("%s broke under %s", course.Name(st), m.ar.scenario)
	case !rep.Complete():
		m.msg = fmt.Sprintf("%s under %s: no verdict — the referee could not judge %s", course.Name(st), m.ar.scenario, course.KindList(rep.Unjudged))
	default:
		m.msg = fmt.Sprintf("%s held under %s this time", course.Name(st), m.ar.scenario)
	}
}

// unbreakable says why b plays nothing on st: a step whose row of the matrix is clear cannot be
// broken, and its Fixes say why.
func unbreakable(st *steps.Step) string {
	for _, ks := range st.Expect {
		if len(ks) > 0 {
			return fmt.Sprintf("no canned scenario breaks %s on one Redis", course.Name(st))
		}
	}
	why := st.Fixes
	if st.NoLock && why != "" {
		why = "it takes no lock: " + strings.ToLower(why[:1]) + why[1:]
	}
	return fmt.Sprintf("%s cannot be broken: every scenario passes (its row of the matrix is all ✓) — %s", course.Title(st), why)
}
