package arena

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// FaultGreedy: after each release of its lock, its retry reaches Redis before any other buyer's
// command.
const FaultGreedy history.Fault = "greedy"

var _ = addMove(&Move{
	Fault: FaultGreedy, Rank: 14, On: OnBuyer, Scenario: steps.Greedy,
	What: "after each release of its lock, its retry reaches Redis before any other buyer's command",
})

// Greedy makes the buyer the greedy one: from its Unlock of the lock it holds until its next
// Lock's command to a node is answered, every other process's lock commands to that node wait
// (at most 4 × TTL; every node once that Lock returns), so after each release its retry reaches
// Redis first on every node it goes to. Hazard: the head start strikes at a
// release of what its Lock wrote; a buyer that never released such a lock had none, and the run
// has no verdict (a ✓ would say its lock let nobody starve, which was never asked), unless its
// order takes no lock at all.
func Greedy() BuyerOption {
	return func(b *Actor) {
		s := b.s
		m := s.newMove(FaultGreedy, func(m *move) {
			if s.a.lockCalls(b.p) == 0 {
				return // no lock: the shop is judged as it is
			}
			s.a.nowhere("the greedy buyer's head start found nowhere to strike: buyer %d never released a lock its Lock wrote", b.N)
		})
		s.a.prio.set(b.p, m)
	}
}

// priority is the greedy scenario's staging: from the moment the greedy buyer calls Unlock on
// the lock it holds until its next Lock call has been answered on a node, every other
// process's lock commands to that node wait (at most cap: 4 × TTL). So after each release the
// greedy retry reaches Redis first on every node it goes to, whatever the scheduler does; a lock
// that lets it in anyway starves the others, one that queues waiters does not. The gate is a
// node's own: a quorum lock's retry goes to every node at once, and one gate for all, opened by
// the first node's answer, let another buyer's command reach a node the greedy retry had not
// reached yet on a loaded machine's real servers (15 × greedy on Sentinel: ✓ once in seven runs).
// Every gate opens when the greedy Lock call returns.
type priority struct {
	mu    sync.Mutex
	p     *process        // the greedy buyer, nil when there is none
	m     *move           // its head start, hit at the first release
	gates []chan struct{} // per lock node: open (closed channel) while others may go
	cap   time.Duration   // the longest the gates stay shut
	stop  *time.Timer     // opens the gates after cap if the greedy buyer never comes back
}

// newPriority has an open gate for each of nodes lock nodes, shut at most cap at a time.
func newPriority(nodes int, cap time.Duration) *priority {
	pr := &priority{gates: make([]chan struct{}, nodes), cap: cap}
	for i := range pr.gates {
		pr.gates[i] = make(chan struct{})
		close(pr.gates[i])
	}
	return pr
}

// set makes p the greedy buyer, its head start the move m.
func (pr *priority) set(p *process, m *move) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.p, pr.m = p, m
}

// shutFor reports whether p's lock commands to node must wait, and the gate to wait on.
func (pr *priority) shutFor(p *process, node int) (chan struct{}, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.p == nil || pr.p == p {
		return nil, false
	}
	select {
	case <-pr.gates[node]:
		return nil, false
	default:
		return pr.gates[node], true
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

// began is called when p's call c began: the greedy buyer's Unlock of a lock it holds shuts
// every node's gate at once, so that no other buyer's lock command holds a node's turn while
// the release waits for it (on real servers that wait, and the scheduler's, ran the release of
// 15's Redlock past its node timeout: the lock stayed, and nobody starved).
func (pr *priority) began(p *process, c *call) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.p == p && c.kind == unlockCall && len(c.holdKeys) > 0 {
		pr.shut()
	}
}

// before is called before p sends cmds to lock node node in call c: the greedy buyer's release
// (a command of its Unlock that may delete a key it held as the call began) is its head start's
// strike, and shuts every node's gate if its call's start had not.
func (pr *priority) before(p *process, c *call, cmds []redis.Cmder, node int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.p != p || c == nil || c.kind != unlockCall || !mayDeleteAny(payload(cmds), p.a.prefix, c.holdKeys[node]) {
		return
	}
	if pr.m != nil {
		pr.m.hit()
	}
	pr.shut()
}

// shut shuts every open gate, all to open again within pr.cap; pr.mu is held.
func (pr *priority) shut() {
	shut := false
	for i, g := range pr.gates {
		select {
		case <-g:
			pr.gates[i] = make(chan struct{})
			shut = true
		default:
		}
	}
	if shut {
		if pr.stop != nil {
			pr.stop.Stop()
		}
		gates := slices.Clone(pr.gates)
		pr.stop = time.AfterFunc(pr.cap, func() { pr.open(gates...) })
	}
}

// after is called once p's cmds to node in call c were answered: the greedy buyer's next Lock
// command opens that node's gate.
func (pr *priority) after(p *process, c *call, node int) {
	pr.mu.Lock()
	g := pr.gates[node]
	mine := pr.p == p && c != nil && c.kind == lockCall
	pr.mu.Unlock()
	if mine {
		pr.open(g)
	}
}

// ended is called when p's call c returned: the greedy buyer's Lock call opens every gate (a
// node it never went to has no retry to wait for).
func (pr *priority) ended(p *process, c *call) {
	pr.mu.Lock()
	gates := slices.Clone(pr.gates)
	mine := pr.p == p && c.kind == lockCall
	pr.mu.Unlock()
	if mine {
		pr.open(gates...)
	}
}

// open opens each of gs that is still a node's gate.
func (pr *priority) open(gs ...chan struct{}) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, g := range pr.gates {
		if !slices.Contains(gs, g) {
			continue
		}
		select {
		case <-g:
		default:
			close(g)
		}
	}
	if pr.stop != nil && pr.allOpen() {
		pr.stop.Stop()
	}
}

// allOpen reports whether every node's gate is open; pr.mu is held.
func (pr *priority) allOpen() bool {
	for _, g := range pr.gates {
		select {
		case <-g:
		default:
			return false
		}
	}
	return true
}

// close opens the gates for good.
func (pr *priority) close() {
	pr.mu.Lock()
	pr.p = nil
	gates := slices.Clone(pr.gates)
	pr.mu.Unlock()
	pr.open(gates...)
}

// is reports whether p is the greedy buyer.
func (pr *priority) is(p *process) bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.p == p
}
