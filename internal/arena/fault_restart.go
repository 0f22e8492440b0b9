package arena

import (
	"fmt"
	"sync"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
)

// FaultRestart: the lock node restarts without persistence, forgetting every key.
const FaultRestart history.Fault = "restart"

var _ = addMove(&Move{
	Fault: FaultRestart, Rank: 10, On: OnNode, Explored: true, Scenario: steps.Restart,
	What:  "the lock node restarts without persistence, forgetting every key",
	Needs: owned,
	Arm:   func(s *Stage, b *Actor, gap int) error { return s.RestartAfterLockWrite(b) },
})

// owned is why env cannot restart its lock node: the lab does not own its server.
func owned(env redisenv.Env) error {
	if !env.Nodes()[0].CanRestart() {
		return fmt.Errorf("%w: restart needs a lock node the lab owns, and the %s backend is a server it does not", ErrCannotStage, env.Backend())
	}
	return nil
}

// RestartAfterLockWrite restarts lock node 0 without persistence right after the next Lock call
// of b (nil: of anyone) that returns holding a key it wrote there (for an order that takes no
// lock: as it works). From then until another buyer has met the lock (or the holder has written,
// or is done), the holder's lock commands are held back, as over a network that is slow while the
// node comes back, so a lease guard's renewal cannot land on the empty node first; the holder
// stays inside until another buyer is inside too (at most 2 × TTL). Restarted closes once the node
// is back.
func (s *Stage) RestartAfterLockWrite(b *Actor) error {
	if err := owned(s.a.env); err != nil {
		return err
	}
	e := s.a.nodes[0]
	m := s.newMove(FaultRestart, func(m *move) { s.nodeMoveUnmet(b, "restart", e) })
	var once sync.Once
	restart := func(h *Actor) {
		once.Do(func() {
			m.strike(h.N, "its lock node restarts without persistence and forgets every key", nil, 0)
			unblock := make([]func(), len(h.p.lock))
			for i := range h.p.lock {
				unblock[i] = h.p.block(i)
			}
			e.turn.Lock()
			s.a.nodeChange(e, history.NodeRestart, e.node.Restart)
			e.turn.Unlock()
			s.sig.fire(sigKey{kind: sigRestarted})
			h.stayInside(h.current(), s.Others(h))
			s.after(s.FirstOf(s.Found(h), h.Wrote(), h.Done()), func() {
				for _, u := range unblock {
					u()
				}
			})
		})
	}
	s.armNode(&armed{node: 0, buyer: b, m: m, strike: restart})
	if b != nil {
		// An order that takes no lock is hit as it works.
		s.spawn(func() {
			if !s.await(b.Under()) || s.a.lockCalls(b.p) > 0 {
				return
			}
			s.a.note("buyer %d's order takes no lock: the restart struck as it worked", b.N)
			restart(b)
		})
	}
	return nil
}

// Restarted closes once a restart move has brought the node back.
func (s *Stage) Restarted() Wait { return s.sig.get(sigKey{kind: sigRestarted}) }
