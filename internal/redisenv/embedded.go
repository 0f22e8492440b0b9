package redisenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Embedded is the in-process backend: miniredis instances whose TTLs run on the wall clock. Each
// lock node is a primary with a replica fed by replaying, in order, every command the primary
// answered; HoldReplication stops the feed, which is how a write gets lost on failover. Hazard:
// miniredis is a model of Redis, not Redis; the server backend checks the same verdicts on the
// real thing.
type Embedded struct {
	prefix    string
	inventory *miniredis.Miniredis
	nodes     []*embNode
}

// embNode is one embedded lock node: a primary and its replica.
type embNode struct {
	name  string
	admin *redis.Client
	feed  *redis.Client // to the replica, while it is one

	feedMu sync.Mutex // serialises lock commands with their replay, and with Failover and Restart

	clockMu sync.Mutex // guards clock
	clock   time.Time  // the time the primary's clock was last set to; it never goes back

	mu       sync.Mutex // guards the fields below
	primary  *miniredis.Miniredis
	replica  *miniredis.Miniredis // nil once promoted
	held     bool
	promoted bool
}

func startMini() (*miniredis.Miniredis, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	return m, m.Start()
}

// NewEmbedded starts one lock node (a primary and its replica) and an inventory store.
func NewEmbedded() (*Embedded, error) { return NewEmbeddedNodes(1) }

// NewEmbeddedNodes starts n lock nodes, each a primary with its replica, and an inventory store.
func NewEmbeddedNodes(n int) (*Embedded, error) {
	e := &Embedded{prefix: newPrefix()}
	var err error
	if e.inventory, err = startMini(); err != nil {
		return nil, err
	}
	for i := range max(n, 1) {
		nd := &embNode{name: nodeName(i, n)}
		if nd.primary, err = startMini(); err != nil {
			e.Close()
			return nil, err
		}
		if nd.replica, err = startMini(); err != nil {
			nd.primary.Close()
			e.Close()
			return nil, err
		}
		nd.feed = redis.NewClient(&redis.Options{Addr: nd.replica.Addr(), PoolSize: 1})
		nd.admin = redis.NewClient(followPrimary(nd.primaryAddr))
		e.nodes = append(e.nodes, nd)
	}
	return e, nil
}

// nodeName names lock node i of n: "lock" when alone, "lock-1", "lock-2"… in a quorum.
func nodeName(i, n int) string {
	if n <= 1 {
		return "lock"
	}
	return fmt.Sprintf("lock-%d", i+1)
}

// Backend returns "embedded".
func (e *Embedded) Backend() string { return "embedded" }

// Prefix returns the run's key prefix.
func (e *Embedded) Prefix() string { return e.prefix }

// Nodes are the lock nodes, each a primary with its replica.
func (e *Embedded) Nodes() []Node {
	ns := make([]Node, len(e.nodes))
	for i, n := range e.nodes {
		ns[i] = n
	}
	return ns
}

// InventoryOptions dials the inventory store.
func (e *Embedded) InventoryOptions() *redis.Options {
	return &redis.Options{Addr: e.inventory.Addr()}
}

// Close stops every instance.
func (e *Embedded) Close() error {
	for _, n := range e.nodes {
		n.close()
	}
	if e.inventory != nil {
		e.inventory.Close()
	}
	return nil
}

func (n *embNode) primaryAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.primary.Addr()
}

// Name names the node.
func (n *embNode) Name() string { return n.name }

// Options dials whichever instance is primary at dial time.
func (n *embNode) Options() *redis.Options { return followPrimary(n.primaryAddr) }

// Hook feeds the replica (see feedHook).
func (n *embNode) Hook() redis.Hook { return feedHook{n} }

// Admin is an uncounted client of the current primary.
func (n *embNode) Admin() *redis.Client { return n.admin }

// Watch returns the node's exact watcher of key.
func (n *embNode) Watch(key string) (Watcher, error) { return newFrozenWatcher(n, key) }

// CanFailover is true: an embedded lock node always starts with a replica.
func (n *embNode) CanFailover() bool { return true }

// CanRestart is true: the lab started this node.
func (n *embNode) CanRestart() bool { return true }

// Outage is short: an in-process restart or promotion takes well under a millisecond.
func (n *embNode) Outage() time.Duration { return 10 * time.Millisecond }

// HoldReplication stops the feed: the replica keeps what it has and hears nothing more.
func (n *embNode) HoldReplication() {
	n.feedMu.Lock()
	defer n.feedMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.held = true
}

// Failover closes the primary (its clients' connections break) and makes the replica primary.
func (n *embNode) Failover(ctx context.Context) error {
	n.feedMu.Lock()
	defer n.feedMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.promoted {
		return errors.New("redisenv: the replica was already promoted; there is nothing left to fail over to")
	}
	n.primary.Close()
	n.primary, n.replica, n.promoted = n.replica, nil, true
	return nil
}

// Restart restarts the primary without persistence: every connection to it breaks, and it comes
// back on the same address with no key. Its replica follows it, empty too.
func (n *embNode) Restart(ctx context.Context) error {
	n.feedMu.Lock()
	defer n.feedMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.primary.Close()
	n.primary.FlushAll()
	if err := n.primary.Restart(); err != nil {
		return fmt.Errorf("redisenv: restarting %s: %w", n.name, err)
	}
	if n.replica != nil {
		n.replica.FlushAll()
	}
	return nil
}

func (n *embNode) close() {
	if n.admin != nil {
		n.admin.Close()
	}
	if n.feed != nil {
		n.feed.Close()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.primary != nil {
		n.primary.Close()
	}
	if n.replica != nil {
		n.replica.Close()
	}
}

func (n *embNode) feeding() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.held && !n.promoted
}

// feedHook replays every command the primary answered on the replica, in the primary's order,
// until the feed is held or the replica promoted.
type feedHook struct{ n *embNode }

func (h feedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h feedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if Handshake(cmd) {
			// Sent on a fresh connection from inside another command, which holds feedMu.
			return next(ctx, cmd)
		}
		n := h.n
		n.feedMu.Lock()
		defer n.feedMu.Unlock()
		// Failover swaps the primary only under feedMu, so this command reaches the instance
		// that the feed below mirrors.
		err := next(ctx, cmd)
		var rerr redis.Error
		answered := err == nil || errors.As(err, &rerr)
		if answered && n.feeding() {
			n.feed.Do(context.WithoutCancel(ctx), cmd.Args()...)
		}
		return err
	}
}

func (h feedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if Handshake(cmds...) {
			return next(ctx, cmds)
		}
		n := h.n
		n.feedMu.Lock()
		defer n.feedMu.Unlock()
		err := next(ctx, cmds)
		if n.feeding() {
			for _, cmd := range cmds {
				n.feed.Do(context.WithoutCancel(ctx), cmd.Args()...)
			}
		}
		return err
	}
}
