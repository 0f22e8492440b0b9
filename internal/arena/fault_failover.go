package arena

import (
	"fmt"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// FaultFailover: the next lock write is not replicated, and the primary then dies. It strikes
// twice: holdBeforeLockWrite holds the node's replication back as that write leaves, and the
// armed node move fails the node over once the Lock returns (afterLock).
const FaultFailover history.Fault = "failover"

var _ = addMove(&Move{
	Fault: FaultFailover, Rank: 6, On: OnNode, Explored: true, Scenario: steps.Failover,
	What:  "the next lock write is not replicated, and the primary then dies",
	Needs: replica,
	Arm:   func(s *Stage, b *Actor, gap int) error { return s.FailoverAfterLockWrite(b) },
})

// replica is why env cannot fail its lock node over: it has no replica to promote.
func replica(env redisenv.Env) error {
	if !env.Nodes()[0].CanFailover() {
		return fmt.Errorf("%w: failover needs a lock replica to promote, and the %s backend has a single node", ErrCannotStage, env.Backend())
	}
	return nil
}

// FailoverAfterLockWrite holds lock node 0's replication back right before the next command of a
// Lock call of b (nil: of anyone) that may write there while no hold has a key there (the lock is
// free: what is lost is that write, not an earlier release), and fails the node over right after
// that call returns holding a key it wrote there, before its caller goes on: the write is lost. A
// Lock that refused after its held-back write (it waited for a replica that never acknowledged
// it) is struck as it returns too. The holder then stays inside until another buyer is inside too (at most 2 × TTL), so the lost
// lock shows as two buyers inside, not as luck.
func (s *Stage) FailoverAfterLockWrite(b *Actor) error {
	if err := replica(s.a.env); err != nil {
		return err
	}
	e := s.a.nodes[0]
	s.a.mu.Lock()
	if e.failedOver {
		s.a.mu.Unlock()
		return ErrFailedOver
	}
	if b == nil {
		e.holdFor = 0
	} else {
		e.holdFor = b.N
	}
	e.holdArmed = true
	s.a.mu.Unlock()
	m := s.newMove(FaultFailover, func(m *move) { s.nodeMoveUnmet(b, "failover", e) })
	s.armNode(&armed{node: 0, buyer: b, m: m, afterHeld: true, strike: func(h *Actor) {
		m.strike(h.N, "the lock node it wrote on fails over before the write reached the replica", nil, 0)
		e.turn.Lock()
		s.a.failover(e)
		e.turn.Unlock()
		h.stayInside(h.current(), s.Others(h))
	}})
	return nil
}

// ErrFailedOver is what a second failover of one node answers: its replica was promoted already.
var ErrFailedOver = fmt.Errorf("the replica was already promoted: r resets the lab to fail over again")

// holdBeforeLockWrite holds e's replication back now if a failover armed it for this command: one
// of a Lock call (of the buyer it waits for) that may write while the lock on e is free, or — on a
// lock seen to hand itself over (its Unlock writes the lock for the next in line) — one of an
// Unlock that may delete or rewrite what its caller holds: the next write that gives someone the
// lock. The caller holds e's turn, so nothing reaches the node between the hold and the command.
func (a *Arena) holdBeforeLockWrite(e *nodeEye, p *process, c *call, cmds []redis.Cmder) {
	if c == nil {
		return
	}
	inner := payload(cmds)
	a.mu.Lock()
	_, _, taken := a.live.HeldKey(e.i)
	who := e.holdFor == 0 || e.holdFor == p.n
	acquire := c.kind == lockCall && !taken && mayWriteAny(inner)
	handOver := c.kind == unlockCall && a.handsOver && mayDeleteAny(inner, a.prefix, c.holdKeys[e.i])
	due := e.holdArmed && !e.held && who && (acquire || handOver)
	if due {
		e.held, e.holdArmed, e.heldBy = true, false, p.n
	}
	a.mu.Unlock()
	if due {
		e.node.HoldReplication()
	}
}
