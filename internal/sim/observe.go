package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/internal/durable"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// nodeEye is the referee's view of the lock on one lock node. Every process command to the node
// passes observe, one at a time, so the watcher can tell what each one did to the lock key.
type nodeEye struct {
	i    int
	node redisenv.Node
	w    redisenv.Watcher
	// turn lets one observed command (or failover, or restart) at a time reach the node. It is
	// held across the command's round trip: a durable.Mutex, so a bubble's clock runs on while
	// other commands wait for it.
	turn *durable.Mutex

	// The fields below are guarded by the arena's mu.
	val        redisenv.Value
	since      time.Duration  // when val was written
	owners     map[string]int // value print → the process whose command wrote it (or that took it over)
	armed      bool           // a failover waits for the next lock write
	held       bool           // the replication is held back for it
	failedOver bool
}

// owner is the process val belongs to: 0 when the lock is free or its writer is unknown.
func (e *nodeEye) owner() int {
	if !e.val.Exists {
		return 0
	}
	return e.owners[e.val.Print]
}

// observe sends cmds (one command, a pipeline or a transaction) of p to node with the watcher
// looking, and lets the referee judge what they did to the lock.
func (a *Arena) observe(ctx context.Context, p *process, node int, cmds []redis.Cmder, c *call, send func() error) error {
	e := a.nodes[node]
	for _, cmd := range cmds {
		if blocking(cmd) {
			// It may wait for a long time: it cannot have the node to itself.
			if anyMayDelete(cmds, a.lockKey) {
				a.mu.Lock()
				a.ref.blind(steps.ForeignRelease, fmt.Sprintf("buyer %d sent a blocking command (%s) that may change the lock; the referee cannot watch such a command", p.n, cmd.Name()))
				a.mu.Unlock()
			}
			return send()
		}
	}
	e.turn.Lock()
	defer e.turn.Unlock()
	// The greedy scenario's gate is checked with the node's turn in hand, so no command that
	// passed it earlier can slip in between the greedy buyer's release and its retry.
	for {
		g, shut := a.prio.shutFor(p)
		if !shut {
			break
		}
		e.turn.Unlock()
		err := a.prio.await(ctx, p, g)
		e.turn.Lock()
		if err != nil {
			return fail(cmds, err)
		}
	}
	a.prio.before(p, c, cmds, a.lockKey, 4*a.t.TTL)
	defer a.prio.after(p, c)
	var err error
	ch, werr := e.w.Observe(context.WithoutCancel(ctx), func(before redisenv.Value) {
		a.mu.Lock()
		hold := e.armed && !e.held && !before.Exists
		e.held = e.held || hold
		a.mu.Unlock()
		if hold {
			e.node.HoldReplication()
		}
		err = send()
	})
	a.mu.Lock()
	if c != nil && c.asked == 0 {
		a.asked++
		c.asked = a.asked
	}
	if werr != nil {
		if _, never := e.w.(blindWatcher); !never {
			a.ref.blind(steps.ForeignRelease, fmt.Sprintf("the referee could not see what a command did to the lock on %s: %v", e.node.Name(), werr))
		}
		a.mu.Unlock()
		return err
	}
	a.judge(e, p, cmds, c, ch)
	fail := e.armed && e.held && !ch.Before.Exists && ch.After.Exists
	if fail {
		e.armed = false
	}
	a.mu.Unlock()
	if fail {
		a.failover(e)
	}
	return err
}

// judge reads one observed change of the lock on e, made by p's cmds, in call c. The caller holds
// a.mu.
func (a *Arena) judge(e *nodeEye, p *process, cmds []redis.Cmder, c *call, ch redisenv.Change) {
	if ch.Expired.Exists {
		a.emit(Event{Kind: EvExpired, Other: max(e.owners[ch.Expired.Print], 0), Node: e.i})
	}
	if ch.Unseen {
		a.ref.blind(steps.ForeignRelease, fmt.Sprintf("the lock on %s changed between two commands, by something the referee did not see (a client outside the buyers' processes?)", e.node.Name()))
	}
	e.val = ch.Before
	if e.i == 0 {
		// The idle clock runs from the lock vanishing to a lock appearing, in the node's order.
		now := a.Since()
		if ch.Expired.Exists || (ch.Before.Exists && !ch.After.Exists) {
			a.ref.waits.freed(now)
		}
		if ch.After.Exists && !ch.Before.Exists {
			a.ref.waits.taken(now)
		}
	}
	b, af := ch.Before, ch.After
	if b == af {
		if b.Exists && e.owner() != p.n && c != nil && c.kind == lockCall {
			a.ref.waiting(a, c, e.owner())
		}
		return
	}
	owner := e.owner()
	own := b.Exists && af.Exists && owner == p.n && p.n != 0
	if b.Exists && !own {
		a.gone(e, p, cmds, ch, owner)
	}
	if af.Exists {
		// A value its owner rewrote stays its owner's (a count, a renewal), unless a Lock call
		// that wrote nothing returns with it: then it was handed over (see lockReturned).
		e.since = a.Since()
		if !own {
			e.owners[af.Print] = p.n
			if c != nil {
				c.wrote[e.i] = true
			}
			if p.n != 0 {
				a.emit(Event{Kind: EvAcquired, Buyer: p.n, Node: e.i})
			}
		} else {
			e.owners[af.Print] = owner
		}
	}
	e.val = af
}

// gone judges a lock value that p's cmds removed or replaced: a release by its owner, a foreign
// release by anyone else — or an expiry, where the watcher cannot rule one out and the commands
// cannot have deleted it. The caller holds a.mu.
func (a *Arena) gone(e *nodeEye, p *process, cmds []redis.Cmder, ch redisenv.Change, owner int) {
	blame := true
	switch {
	case !anyMayDelete(cmds, a.lockKey):
		// No such command can delete or replace a value: Redis expired it, and a watcher
		// that saw it happen mid-command would have been wrong to say otherwise.
		blame = false
		if !ch.Ambiguous {
			a.ref.blind(steps.ForeignRelease, fmt.Sprintf("the lock on %s vanished under buyer %d's %s, which cannot delete it", e.node.Name(), p.n, a.label(cmds, e.i)))
		}
	case ch.Ambiguous && plainDeletes(cmds, a.lockKey):
		blame = !replyZero(cmds, a.lockKey) // DEL answered how many it deleted
	case ch.Ambiguous:
		blame = false
		a.ref.blind(steps.ForeignRelease, fmt.Sprintf("buyer %d's %s ran as the lock on %s ran out; the referee could not tell which of them removed it", p.n, a.label(cmds, e.i), e.node.Name()))
	}
	switch {
	case !blame:
		a.emit(Event{Kind: EvExpired, Other: owner, Node: e.i})
	case owner == p.n || owner == 0:
		if p.n != 0 {
			a.emit(Event{Kind: EvReleased, Buyer: p.n, Node: e.i})
		}
	default:
		a.ref.foreignRelease(a, p.n, owner, e)
	}
}

// failover kills e's primary and promotes its replica, then tells what the promoted replica has.
// The caller holds e.turn, not a.mu.
func (a *Arena) failover(e *nodeEye) {
	ctx := context.Background()
	if err := e.node.Failover(ctx); err != nil {
		a.emit(Event{Kind: EvFailover, Node: e.i, Detail: "failed: " + err.Error()})
		return
	}
	v, err := e.w.Resync(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	e.failedOver = true
	a.ref.failedOver = true
	a.emit(Event{Kind: EvFailover, Node: e.i, Detail: "the lock primary died; the replica, which never saw the last lock write, is primary now"})
	if err != nil {
		a.ref.blind(steps.ForeignRelease, "after the failover the referee cannot see the lock: "+err.Error())
		return
	}
	if e.val.Exists && v != e.val {
		a.emit(Event{Kind: EvLost, Other: e.owner(), Node: e.i})
		if e.i == 0 && !v.Exists {
			a.ref.waits.freed(a.Since())
		}
	}
	e.val = v
}

// Restart restarts lock node i without persistence: it forgets every key, the lock with them.
func (a *Arena) Restart(i int) error {
	if i < 0 || i >= len(a.nodes) {
		return fmt.Errorf("sim: there is no lock node %d", i+1)
	}
	e := a.nodes[i]
	e.turn.Lock()
	defer e.turn.Unlock()
	ctx := context.Background()
	if err := e.node.Restart(ctx); err != nil {
		a.emit(Event{Kind: EvRestart, Node: i, Detail: "failed: " + err.Error()})
		return err
	}
	v, err := e.w.Resync(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.emit(Event{Kind: EvRestart, Node: i, Detail: e.node.Name() + " restarted without persistence: it forgot every key"})
	if err != nil {
		a.ref.blind(steps.ForeignRelease, "after the restart the referee cannot see the lock: "+err.Error())
		return nil
	}
	if e.val.Exists && v != e.val {
		a.emit(Event{Kind: EvLost, Other: e.owner(), Node: e.i})
		if e.i == 0 && !v.Exists {
			a.ref.waits.freed(a.Since())
		}
	}
	e.val = v
	return nil
}

// ArmFailover makes the next lock write on node i skip the replica, and fails over right after
// it.
func (a *Arena) ArmFailover(i int) error {
	if i < 0 || i >= len(a.nodes) {
		return fmt.Errorf("sim: there is no lock node %d", i+1)
	}
	return a.armFailover(i)
}

// armFailover makes the next lock write on node i skip the replica, and fails over right after it.
func (a *Arena) armFailover(i int) error {
	e := a.nodes[i]
	if !e.node.CanFailover() {
		return fmt.Errorf("sim: the %s backend has no replica to fail over to", a.env.Backend())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.failedOver {
		return errors.New("sim: the replica was already promoted; reset to fail over again")
	}
	e.armed = true
	return nil
}

// callBegan records a Lock or Unlock call of p.
func (a *Arena) callBegan(p *process, ctx context.Context, kind callKind) *call {
	a.mu.Lock()
	defer a.mu.Unlock()
	o := orderFrom(ctx)
	if o == nil && len(p.current) == 1 {
		o = p.current[0]
	}
	c := &call{kind: kind, p: p, o: o, began: a.Since(), wrote: make([]bool, len(a.nodes))}
	if kind == lockCall && p.n != 0 {
		a.ref.waits.began(c)
	}
	return c
}

// lockReturned records what a Lock call answered. A call that got the lock without writing it
// anywhere itself was handed it: the value written for it during the call is its own.
func (a *Arena) lockReturned(c *call, ok bool, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !ok || err != nil {
		if c.p.n != 0 {
			a.ref.waits.refused(c)
			a.emit(Event{Kind: EvRefused, Buyer: c.p.n, Order: c.order()})
		}
		return
	}
	wroteAny := false
	for _, w := range c.wrote {
		wroteAny = wroteAny || w
	}
	for _, e := range a.nodes {
		// Only a call that wrote the lock nowhere was handed it; one that wrote on some nodes
		// (a quorum) holds those, and another's value on the rest stays another's.
		if !wroteAny && e.val.Exists && e.since >= c.began && e.owner() != c.p.n {
			e.owners[e.val.Print] = c.p.n
			if c.p.n != 0 {
				a.emit(Event{Kind: EvAcquired, Buyer: c.p.n, Node: e.i, Detail: "handed over"})
			}
		}
	}
	if c.p.n != 0 {
		a.ref.acquired(a, c, c.o != nil && c.o.holds == 0)
	}
	if o := c.o; o != nil {
		o.holds++
		if o.holds == 1 {
			o.heldAt = a.Since()
		}
	}
}

// unlockBegan records the start of an Unlock call: an order that has read the stock but not
// written it leaves the critical section here.
func (a *Arena) unlockBegan(c *call) {
	if c.o != nil {
		a.closeSpan(c.o)
	}
}

// unlockReturned records the end of an Unlock call: the order's hold ends with its last Unlock.
func (a *Arena) unlockReturned(c *call) {
	o := c.o
	if o == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if o.holds == 1 {
		a.ref.released(a, o)
	} else if o.holds > 1 {
		o.holds--
	}
}

// LockState is what the lock server says about the lock right now.
type LockState struct {
	Held       bool
	Value      string        // the lock's value in words: a string's value, a hash's fields
	TTL        time.Duration // remaining; -1 when the key has no expiry
	Owner      int           // the buyer whose command wrote this value, 0 if none or unknown
	FailedOver bool          // the replica has been promoted
}

// Lock reads the lock on the first node: its value, remaining TTL, and whose it is, all from one
// reading.
func (a *Arena) Lock(ctx context.Context) LockState { return a.lockOn(ctx, a.nodes[0]) }

// Locks reads the lock on every node, in node order: a quorum lock is held where a majority of
// them say so.
func (a *Arena) Locks(ctx context.Context) []LockState {
	out := make([]LockState, len(a.nodes))
	for i, e := range a.nodes {
		out[i] = a.lockOn(ctx, e)
	}
	return out
}

// NodeNames names the lock nodes, in node order.
func (a *Arena) NodeNames() []string {
	names := make([]string, len(a.nodes))
	for i, e := range a.nodes {
		names[i] = e.node.Name()
	}
	return names
}

func (a *Arena) lockOn(ctx context.Context, e *nodeEye) LockState {
	v, ttl, err := e.w.Peek(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	st := LockState{FailedOver: e.failedOver}
	if err != nil || !v.Exists {
		return st
	}
	st.Held, st.Value, st.TTL = true, v.Text, ttl
	st.Owner = max(e.owners[v.Print], 0)
	return st
}

// blindWatcher stands in for a watcher the node would not give (a user not allowed to read the
// lock, say): every command still goes out, and every observation fails with the reason.
type blindWatcher struct{ err error }

func (w blindWatcher) Observe(ctx context.Context, send func(before redisenv.Value)) (redisenv.Change, error) {
	send(redisenv.Value{})
	return redisenv.Change{}, w.err
}
func (w blindWatcher) Peek(context.Context) (redisenv.Value, time.Duration, error) {
	return redisenv.Value{}, 0, w.err
}
func (w blindWatcher) Resync(context.Context) (redisenv.Value, error) { return redisenv.Value{}, w.err }
func (w blindWatcher) Close() error                                   { return nil }
