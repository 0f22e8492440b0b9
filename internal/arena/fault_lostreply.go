package arena

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// FaultLostReply: a lock command's reply is lost: it landed, its client saw a timeout.
const FaultLostReply history.Fault = "lost-reply"

var _ = addMove(&Move{
	Fault: FaultLostReply, Rank: 11, On: OnOrder, Explored: true, Scenario: steps.LostReply,
	What: "a lock command's reply is lost: it landed, its client saw a timeout",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.LoseLockReply(); return nil },
})

// LoseLockReply loses the reply to the buyer's next Lock command that may write: the command
// reaches the server and does what it does, but the reply never reaches the client, which waits
// until its read times out (a quarter TTL) and, like go-redis, sends the command again (MaxRetries).
// MIT 6.5840's labrpc drops replies so; the acquire is indeterminate. The Wait closes once the
// command whose reply is lost has gone out.
func (b *Actor) LoseLockReply() Wait {
	s := b.s
	m := s.newMove(FaultLostReply, func(m *move) {
		if s.a.lockCalls(b.p) == 0 {
			s.a.note("buyer %d's order takes no lock: there is no lock reply to lose", b.N)
			return
		}
		s.a.nowhere("the lost reply found nowhere to strike: buyer %d's Lock sent no command that may write", b.N)
	})
	b.p.mu.Lock()
	b.p.lose = &lostReply{m: m, after: s.a.t.TTL / 4}
	b.p.mu.Unlock()
	return m.Struck()
}

// lostReply is a lost reply armed on a process: the reply to its next Lock command that changes a
// key (its write lands) never reaches it.
type lostReply struct {
	m     *move
	after time.Duration // how long the client waits for the reply: its read timeout
}

// loseReply plays a lost reply armed on p, once command cmds of call c to node has been answered
// with err: if it is the command the reply of which is lost, the client waits for it for its
// read timeout, then sends the command again, as go-redis does with a command that timed out
// (MaxRetries); the second answer is the one the caller gets. It returns the answer the caller
// gets.
func (p *process) loseReply(ctx context.Context, c *call, node int, cmds []redis.Cmder, err error, changed bool, send func() error) error {
	if c == nil || c.kind != lockCall || !changed {
		return err // a command that wrote nothing (refused, or a script the server does not have yet): nothing to lose
	}
	inner := payload(cmds)
	p.mu.Lock()
	lr := p.lose
	if lr == nil {
		p.mu.Unlock()
		return err
	}
	p.lose = nil
	p.mu.Unlock()
	a := p.a
	hc := a.cmds(inner)
	a.mu.Lock()
	label := a.live.CommandOf(hc, node, c.id).Label
	a.mu.Unlock()
	lr.m.strike(p.n, fmt.Sprintf("its %s reached the server and did what it does, but the reply is lost on the way back: its client waits %s, times out, and sends the command again (go-redis retries a command that timed out)", label, lr.after), hc, node)
	if err := p.sleep(ctx, lr.after); err != nil {
		return fail(cmds, err)
	}
	if err := p.leave(ctx, node, inner, c); err != nil {
		return fail(cmds, err)
	}
	_, _, err = a.observe(ctx, p, node, cmds, c, send)
	return err
}
