package redisenv

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Embedded is the in-process backend: miniredis instances whose TTLs run on the wall clock. Its
// replica is fed by replaying, in order, every command the primary answered; HoldReplication stops
// the feed, which is how a write gets lost on failover. Hazard: miniredis is a model of Redis, not
// Redis; the server backend checks the same verdicts on the real thing.
type Embedded struct {
	prefix    string
	inventory *miniredis.Miniredis
	admin     *redis.Client
	feed      *redis.Client // to the replica, while it is one

	feedMu sync.Mutex // serialises lock commands with their replay, and with Failover

	clockMu sync.Mutex // guards clock
	clock   time.Time  // the time the primary's clock was last set to; it never goes back

	mu       sync.Mutex // guards the fields below
	primary  *miniredis.Miniredis
	replica  *miniredis.Miniredis // nil once promoted
	held     bool
	promoted bool
}

// NewEmbedded starts a lock primary, its replica and an inventory store.
func NewEmbedded() (*Embedded, error) {
	start := func() (*miniredis.Miniredis, error) {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		return m, m.Start()
	}
	e := &Embedded{prefix: newPrefix()}
	var err error
	if e.primary, err = start(); err != nil {
		return nil, err
	}
	if e.replica, err = start(); err != nil {
		e.primary.Close()
		return nil, err
	}
	if e.inventory, err = start(); err != nil {
		e.primary.Close()
		e.replica.Close()
		return nil, err
	}
	e.feed = redis.NewClient(&redis.Options{Addr: e.replica.Addr(), PoolSize: 1})
	e.admin = redis.NewClient(followPrimary(e.primaryAddr))
	return e, nil
}

// Backend returns "embedded".
func (e *Embedded) Backend() string { return "embedded" }

// Prefix returns the run's key prefix.
func (e *Embedded) Prefix() string { return e.prefix }

func (e *Embedded) primaryAddr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.primary.Addr()
}

// Nodes is the one lock node: the primary and its replica.
func (e *Embedded) Nodes() []Node { return []Node{embeddedNode{e}} }

// embeddedNode is the Embedded lock server as a Node.
type embeddedNode struct{ e *Embedded }

func (n embeddedNode) Name() string                       { return "lock" }
func (n embeddedNode) Options() *redis.Options            { return followPrimary(n.e.primaryAddr) }
func (n embeddedNode) Hook() redis.Hook                   { return feedHook{n.e} }
func (n embeddedNode) Admin() *redis.Client               { return n.e.admin }
func (n embeddedNode) CanFailover() bool                  { return true }
func (n embeddedNode) HoldReplication()                   { n.e.HoldReplication() }
func (n embeddedNode) Failover(ctx context.Context) error { return n.e.Failover(ctx) }
func (n embeddedNode) Watch(key string) (Watcher, error)  { return newFrozenWatcher(n.e, key) }

// InventoryOptions dials the inventory store.
func (e *Embedded) InventoryOptions() *redis.Options {
	return &redis.Options{Addr: e.inventory.Addr()}
}

// Admin is an uncounted client of the current lock primary.
func (e *Embedded) Admin() *redis.Client { return e.admin }

// HoldReplication stops the feed: the replica keeps what it has and hears nothing more.
func (e *Embedded) HoldReplication() {
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held = true
}

// Failover closes the primary (its clients' connections break) and makes the replica primary.
func (e *Embedded) Failover(ctx context.Context) error {
	e.feedMu.Lock()
	defer e.feedMu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.promoted {
		return errors.New("redisenv: the replica was already promoted; there is nothing left to fail over to")
	}
	e.primary.Close()
	e.primary, e.replica, e.promoted = e.replica, nil, true
	return nil
}

// Close stops every instance.
func (e *Embedded) Close() error {
	e.admin.Close()
	e.feed.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.primary.Close()
	if e.replica != nil {
		e.replica.Close()
	}
	e.inventory.Close()
	return nil
}

func (e *Embedded) feeding() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.held && !e.promoted
}

// feedHook replays every command the primary answered on the replica, in the primary's order,
// until the feed is held or the replica promoted.
type feedHook struct{ e *Embedded }

func (h feedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h feedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if Handshake(cmd) {
			// Sent on a fresh connection from inside another command, which holds feedMu.
			return next(ctx, cmd)
		}
		e := h.e
		e.feedMu.Lock()
		defer e.feedMu.Unlock()
		// Failover swaps the primary only under feedMu, so this command reaches the instance
		// that the feed below mirrors.
		err := next(ctx, cmd)
		var rerr redis.Error
		answered := err == nil || errors.As(err, &rerr)
		if answered && e.feeding() {
			e.feed.Do(context.WithoutCancel(ctx), cmd.Args()...)
		}
		return err
	}
}

func (h feedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if Handshake(cmds...) {
			return next(ctx, cmds)
		}
		e := h.e
		e.feedMu.Lock()
		defer e.feedMu.Unlock()
		err := next(ctx, cmds)
		if e.feeding() {
			for _, cmd := range cmds {
				e.feed.Do(context.WithoutCancel(ctx), cmd.Args()...)
			}
		}
		return err
	}
}
