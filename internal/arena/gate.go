package arena

import (
	"context"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/redis/go-redis/v9"
)

// Gate holds every command a buyer's process sends, as it leaves the process, until a driver lets
// it go: a drive session (internal/drive), whose learner is the scheduler. It stands where the
// process's round trip stands, in its network (the hook every command passes), so a step cannot
// tell a held command from a slow network, and no step has a hook for it. The end-of-run probe
// (buyer 0) is never held.
//
// Hazard: Pass holds the goroutine that sends; it must return when ctx ends or gone closes (the
// process died), or a crash, or a lease guard ending its request, waits for ever.
type Gate interface {
	Pass(ctx context.Context, c Held, gone <-chan struct{}) error
}

// Held is a command at the gate: whose it is, where it goes, in which call, what it says (as the
// history keeps it: the run's prefix off its keys).
type Held struct {
	Buyer int
	Node  int    // the lock node it goes to; -1: the inventory
	In    string // history.CallLock, history.CallUnlock, or "" (a watchdog's, the handler's own)
	Cmds  []history.Cmd
}

// leave sends cmds of p (in call c, nil: none) on their way to lock node node (-1: the inventory):
// through its network, and in a driven arena (Config.Gate) through the gate in place of the round
// trip: the held command's wait is its round trip. A script's body sent again because the server
// did not know its SHA (go-redis's EVALSHA, then EVAL) belongs to the round trip already let go.
func (p *process) leave(ctx context.Context, node int, cmds []redis.Cmder, c *call) error {
	g := p.a.gate
	if g == nil || p.n == 0 {
		return p.network(ctx, node, c)
	}
	if err := p.outages(ctx, node); err != nil {
		return err
	}
	if p.resending(cmds) {
		return nil
	}
	h := Held{Buyer: p.n, Node: node, Cmds: p.a.cmds(cmds)}
	if c != nil {
		h.In = map[callKind]string{lockCall: history.CallLock, unlockCall: history.CallUnlock}[c.kind]
	}
	return g.Pass(ctx, h, p.dead)
}

// noScript notes, after a command of p was answered err, whether the server did not know a
// script's SHA: go-redis sends the script's body next, from the same goroutine.
func (p *process) noScript(err error) {
	if p.a.gate == nil || err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		return
	}
	p.mu.Lock()
	p.again = goid()
	p.mu.Unlock()
}

// resending reports whether cmds are the body of a script whose SHA the server did not know, sent
// again by the goroutine that was told so.
func (p *process) resending(cmds []redis.Cmder) bool {
	if len(cmds) != 1 || !strings.HasPrefix(cmds[0].Name(), "eval") || strings.HasPrefix(cmds[0].Name(), "evalsha") {
		return false
	}
	g := goid()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.again != g {
		return false
	}
	p.again = 0
	return true
}
