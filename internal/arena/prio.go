package arena

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// priority is the greedy scenario's staging: from the moment the greedy buyer sends the command
// that releases its lock until its next Lock call's first command has been answered, every other
// process's lock commands wait (at most half a TTL). So after each release the greedy retry
// reaches Redis first, whatever the scheduler does; a lock that lets it in anyway starves the
// others, one that queues waiters does not.
type priority struct {
	mu   sync.Mutex
	p    *process      // the greedy buyer, nil when there is none
	m    *move         // its head start, hit at the first release
	gate chan struct{} // open (closed channel) while others may go
	stop *time.Timer   // opens the gate if the greedy buyer never comes back
}

func newPriority() *priority {
	g := make(chan struct{})
	close(g)
	return &priority{gate: g}
}

// set makes p the greedy buyer, its head start the move m.
func (pr *priority) set(p *process, m *move) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.p, pr.m = p, m
}

// shutFor reports whether p's lock commands must wait, and the gate to wait on.
func (pr *priority) shutFor(p *process) (chan struct{}, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.p == nil || pr.p == p {
		return nil, false
	}
	select {
	case <-pr.gate:
		return nil, false
	default:
		return pr.gate, true
	}
}

// await waits until gate opens.
func (pr *priority) await(ctx context.Context, p *process, gate chan struct{}) error {
	select {
	case <-gate:
		return nil
	case <-p.dead:
		return ErrCrashed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// before is called before p sends cmds to lock node node in call c: the greedy buyer's release
// (a command of its Unlock that may delete a key it held as the call began) shuts the gate.
func (pr *priority) before(p *process, c *call, cmds []redis.Cmder, node int, cap time.Duration) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.p != p || c == nil || c.kind != unlockCall || !mayDeleteAny(payload(cmds), p.a.prefix, c.holdKeys[node]) {
		return
	}
	if pr.m != nil {
		pr.m.hit()
	}
	select {
	case <-pr.gate:
		pr.gate = make(chan struct{})
		g := pr.gate
		pr.stop = time.AfterFunc(cap, func() { pr.open(g) })
	default:
	}
}

// after is called once p's cmds in call c were answered: the greedy buyer's next Lock command
// opens the gate.
func (pr *priority) after(p *process, c *call) {
	pr.mu.Lock()
	g := pr.gate
	mine := pr.p == p && c != nil && c.kind == lockCall
	pr.mu.Unlock()
	if mine {
		pr.open(g)
	}
}

func (pr *priority) open(g chan struct{}) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if g != pr.gate {
		return
	}
	select {
	case <-g:
	default:
		close(g)
		if pr.stop != nil {
			pr.stop.Stop()
		}
	}
}

// close opens the gate for good.
func (pr *priority) close() {
	pr.mu.Lock()
	pr.p = nil
	g := pr.gate
	pr.mu.Unlock()
	pr.open(g)
}

// is reports whether p is the greedy buyer.
func (pr *priority) is(p *process) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.p == p
}
