package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/sim"
)

// injectMsg is what a fault key did, with a reading of the lock taken right after it, so the
// answer and the LOCK line describe the same moment.
type injectMsg struct {
	gen  int
	f    sim.Fault
	who  int
	err  error
	lock lockReading
}

// liveIntent carries out an intent that needs live buyers.
func (m *model) liveIntent(in tea.Msg) tea.Cmd {
	if f, ok := in.(injectFault); ok && m.ar != nil && m.ar.noLock {
		switch f.f {
		case sim.FaultFailover:
			m.msg = "failover: this step takes no lock, so there is no lock write to lose — nothing armed"
			return nil
		case sim.FaultPartition:
			m.msg = "partition: this step takes no lock, so there is no link to a lock server to cut — nothing armed"
			return nil
		}
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
			m.msg = "new orders paused (orders under way go on); space resumes"
		} else {
			m.msg = "orders resumed"
		}
	case addBuyers:
		n := m.buyers + in.n
		if n < 1 || n > maxBuyers {
			m.msg = fmt.Sprintf("buyers: 1…%d", maxBuyers)
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
		f := in.f
		m.msg = fmt.Sprintf("%s → …", f)
		return func() tea.Msg {
			who, err := live.Inject(f)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			a := live.Arena()
			r := lockReading{at: a.Since()}
			r.st = a.Lock(ctx)
			return injectMsg{gen: gen, f: f, who: who, err: err, lock: r}
		}
	}
	return nil
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
	m.msg = injectAnswer(msg, m.ar.noLock, m.arenaP.keys.faults[msg.f].Help().Key)
	if msg.f == sim.FaultFailover && msg.err == nil {
		m.ar.armed = true
	}
}

// injectAnswer says what a fault (pressed with key) did, in the words of the reading that came
// with it.
func injectAnswer(msg injectMsg, noLock bool, key string) string {
	switch {
	case errors.Is(msg.err, sim.ErrNoHolder) && noLock:
		return fmt.Sprintf("%s: nobody is inside the critical section right now, so nothing was hit — try again when a █ is drawn", msg.f)
	case errors.Is(msg.err, sim.ErrNoHolder) && msg.lock.st.Owner != 0:
		return fmt.Sprintf("%s: nobody held the lock when the key arrived; buyer %d has taken it since — press %s again", msg.f, msg.lock.st.Owner, key)
	case errors.Is(msg.err, sim.ErrNoHolder):
		return fmt.Sprintf("%s: nobody holds the lock right now, so nothing was hit — try again when a bar is drawn", msg.f)
	case msg.err != nil:
		return fmt.Sprintf("%s: %v", msg.f, msg.err)
	case msg.f == sim.FaultFailover:
		return "failover armed: the next lock write will not reach the replica, then the primary dies"
	}
	what := map[sim.Fault]string{
		sim.FaultCrash:      "crashed: its process died, its deferred code will never run",
		sim.FaultError:      "its work will return an error",
		sim.FaultSlow:       "its work now takes 3 × TTL",
		sim.FaultPause:      "will freeze (stop-the-world) for 3 × TTL just before its stock write leaves",
		sim.FaultUnlockRace: "will freeze just before the command that deletes its lock",
		sim.FaultReentrant:  "its work calls a helper that takes the same lock again",
		sim.FaultPartition:  "inside its work, its link to the lock server is cut for 3 × TTL; the inventory still answers",
		sim.FaultSecond:     "its process starts a second order now, with the same Locker (a second request)",
	}[msg.f]
	return fmt.Sprintf("%s → buyer %d: %s", msg.f, msg.who, what)
}
