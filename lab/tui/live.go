package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
)

// injectMsg is what a fault key did, with a reading of the lock taken right after it, so the
// answer and the LOCK line describe the same moment.
type injectMsg struct {
	gen  int
	sc   *scenario.Scenario
	who  int
	err  error
	lock lockReading
}

// liveIntent carries out an intent that needs live buyers.
func (m *model) liveIntent(in tea.Msg) tea.Cmd {
	if f, ok := in.(injectFault); ok && m.ar != nil && m.ar.noLock && f.sc.Lockless != "" {
		m.msg = fmt.Sprintf("%s: %s", f.sc.Name, f.sc.Lockless)
		return nil
	}
	if m.sess == nil || m.sess.live == nil {
		m.msg = "no live buyers now: press r to start them (b replays the scenario)"
		return nil
	}
	live, gen := m.sess.live, m.gen
	switch in := in.(type) {
	case holdOrders:
		m.paused = !m.paused
		live.SetPaused(m.paused)
		if m.paused {
			m.msg = "new orders paused (orders under way go on); , and . rewind through the timeline; space resumes"
		} else {
			m.ar.leaveRewind()
			m.msg = "orders resumed"
		}
	case addBuyers:
		n := m.buyers + in.n
		if n < 1 || n > MaxBuyers {
			m.msg = fmt.Sprintf("buyers: 1…%d", MaxBuyers)
			return nil
		}
		m.buyers = n
		live.SetBuyers(n)
		m.ar.roster.sync(live.Active())
		m.msg = buyersText(n)
		if in.n < 0 {
			m.msg += fmt.Sprintf("; buyer %d retired (it finishes the order it is in)", m.ar.roster.lastRetired)
		}
	case injectFault:
		sc := in.sc
		m.pressed = sc.Key + " " + string(sc.Name)
		if m.ar.shelf <= 0 && sc.NeedsHolder {
			m.msg = fmt.Sprintf("%s: the shelf is sold out, so nobody orders and nothing can be hit — r restocks", sc.Name)
			return nil
		}
		m.msg = fmt.Sprintf("%s → … (waiting up to a TTL for a holder)", sc.Name)
		if sc.Quiet {
			m.msg = fmt.Sprintf("%s → … new orders wait until those under way are done, so that the lock is taken free, with nobody in line, as in the scenario", sc.Name)
		}
		s, within, quorum := m.sess, m.timing().TTL, m.ar.multi()
		return func() tea.Msg {
			who, err := s.inject(sc, within)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			a := live.Arena()
			r := lockReading{at: a.Since()}
			r.read(ctx, a, quorum)
			return injectMsg{gen: gen, sc: sc, who: who, err: err, lock: r}
		}
	}
	return nil
}

// inject plays scenario sc's move on the current holder; when nobody holds the lock (on the
// back-off steps it sits free much of the time), it tries again for up to within, so a key
// pressed between two holds hits the next holder. A stopped session is never hit.
func (s *session) inject(sc *scenario.Scenario, within time.Duration) (int, error) {
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			return 0, errors.New("the session has stopped")
		}
		who, err := scenario.Press(s.live, sc)
		s.mu.Unlock()
		if !errors.Is(err, arena.ErrNoHolder) || time.Now().After(deadline) {
			return who, err
		}
		time.Sleep(within / 40)
	}
}

// buyersText is "1 buyer", "5 buyers".
func buyersText(n int) string {
	if n == 1 {
		return "1 buyer"
	}
	return fmt.Sprintf("%d buyers", n)
}

// injected shows what a fault key did, and the reading taken after it.
func (m *model) injected(msg injectMsg) {
	if msg.gen != m.gen || m.ar == nil {
		return
	}
	m.ar.setLock(msg.lock)
	m.msg = injectAnswer(msg, m.ar.noLock, m.arenaP.keys.faultKey(msg.sc.Name).Help().Key)
	m.after = nil
	if msg.sc.Armed != "" && msg.err == nil {
		m.ar.armed = msg.sc.Armed
	}
	if msg.err == nil && msg.who != 0 {
		m.after = &aftermath{gen: m.gen, follows: msg.sc.Follows, who: msg.who, said: m.msg}
		if msg.sc.Follows == scenario.FollowsSecondOrder {
			m.after.seen(m.ar, msg.who)
		}
	}
}

// aftermath is a fault that hit buyer who: the first thing that came of it is added to the
// status line (said), so cause and effect are read together when the log is off screen.
type aftermath struct {
	gen, who int
	follows  scenario.Follow
	said     string
	second   int   // a second request: its order's number, once it started
	others   []int // and the buyer's other orders under way then
}

// then tells, for one event (already in the picture a), what came of the fault, in the
// referee's words where it has some; "" when the event is not about it.
func (af *aftermath) then(e referee.Event, a *board) string {
	switch {
	case e.Kind == referee.EvOverlap && (e.Buyer == af.who || e.Other == af.who):
		return e.Sentence
	case e.Kind == referee.EvViolation && (e.Buyer == af.who || e.Other == af.who):
		return e.Sentence
	case af.follows == scenario.FollowsSecondOrder && e.Kind == referee.EvStart && e.Buyer == af.who && af.second == 0:
		af.second = e.Order
	case af.follows == scenario.FollowsSecondOrder && e.Kind == referee.EvEnter && e.Buyer == af.who && e.Order == af.second && len(af.others) > 0 &&
		!slices.ContainsFunc(af.others, func(k int) bool { return a.pic.Under(af.who, k) }):
		// the referee says nothing of a lock that made a request wait: the picture does
		return fmt.Sprintf("buyer %d's second order waited its turn: it went in only once its other order had returned", af.who)
	case af.follows == scenario.FollowsUnsold && e.Kind == referee.EvDone && e.Buyer == af.who && !e.Sold:
		return e.Words()
	}
	return ""
}

// seen takes the buyer's orders under way when the second request was answered: its events may
// be in the picture already, the second order being the latest.
func (af *aftermath) seen(a *board, n int) {
	af.others = append(af.others, a.pic.UnderOrders(n)...)
	if len(af.others) > 1 {
		slices.Sort(af.others)
		af.second, af.others = af.others[len(af.others)-1], af.others[:len(af.others)-1]
	}
}

// follow adds to the status line what came of the last fault, once.
func (m *model) follow(e referee.Event) {
	af := m.after
	if af == nil || af.gen != m.gen || m.msg != af.said {
		m.after = nil // the status line says something else now
		return
	}
	if s := af.then(e, m.ar); s != "" {
		m.msg = af.said + "; then: " + s
		m.after = nil
	}
}

// injectAnswer says what a fault key (pressed as key) did, in the words of the reading that came
// with it.
func injectAnswer(msg injectMsg, noLock bool, key string) string {
	f := msg.sc.Name
	switch {
	case errors.Is(msg.err, arena.ErrNoHolder) && noLock:
		return fmt.Sprintf("%s: nobody was inside the critical section for a whole TTL, so nothing was hit — try again when a █ is drawn", f)
	case errors.Is(msg.err, arena.ErrNoHolder) && msg.lock.st.Owner != 0:
		return fmt.Sprintf("%s: nobody held the lock for a whole TTL after the key; buyer %d has taken it since — press %s again", f, msg.lock.st.Owner, key)
	case errors.Is(msg.err, arena.ErrNoHolder):
		return fmt.Sprintf("%s: nobody held the lock for a whole TTL after the key, so nothing was hit — try again when a bar is drawn", f)
	case msg.err != nil:
		return fmt.Sprintf("%s: %v", f, msg.err)
	case msg.who == 0:
		return msg.sc.Pressed
	}
	return fmt.Sprintf("%s → buyer %d: %s", f, msg.who, msg.sc.Pressed)
}
