package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/lockstep-lab/lockstep/internal/durable"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Embedded is the in-process backend: miniredis instances whose TTLs run on the process's clock —
// the wall clock, or a testing/synctest bubble's fake one when the backend is opened inside a
// bubble. Clients reach them through in-memory connections (memPipe), never a listener, so the
// whole backend can live in a bubble. Each lock node is a primary with a replica fed by
// replaying, in order, every command the primary answered; HoldReplication stops the feed, which
// is how a write gets lost on failover. Hazard: miniredis is a model of Redis, not Redis; the
// server backend checks the same verdicts on the real thing.
type Embedded struct {
	prefix    string
	inventory *mini
	nodes     []*embNode
	invStray  atomic.Int64 // the inventory's unclaimed writes
}

// mini is one miniredis, served without a listener.
type mini struct {
	m         *miniredis.Miniredis
	srv       *server.Server
	strangers *atomic.Int64 // writes from connections no one claimed (shared by a node's instances)
	mu        sync.Mutex
	down      bool // closed: it refuses new connections
}

// newMini starts a miniredis with TTLs on the clock (ClockTTL), served on in-memory connections.
// Hazard: inside a bubble it must be made inside the bubble, or its TTLs run on the wall clock.
func newMini(strangers *atomic.Int64) (*mini, error) {
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true)
	// Dial starts the server without a listener; the connection itself is not needed.
	c, err := m.Dial()
	if err != nil {
		return nil, err
	}
	c.Close()
	return &mini{m: m, srv: m.Server(), strangers: strangers}, nil
}

// errDown is what a dial of a closed (failed over, restarting) miniredis answers.
var errDown = errors.New("redisenv: connection refused: the embedded node is down")

// dial opens a new connection to the miniredis.
func (x *mini) dial() (net.Conn, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.down {
		return nil, errDown
	}
	client, server := memPipe()
	client.(*memConn).strangers = x.strangers
	x.srv.ServeConn(server)
	return client, nil
}

// close shuts the miniredis: every connection to it breaks, and no new one opens.
func (x *mini) close() {
	x.mu.Lock()
	x.down = true
	x.mu.Unlock()
	x.m.Close()
}

// memOptions configures a client whose every dial reaches dial(). Addr is never dialled: it is an
// IP literal, so that go-redis resolves nothing (a resolver's state, once owned by one synctest
// bubble, is fatal to the next), and a port nothing listens on. Maintenance notifications are
// off (they would resolve Addr too), and CLIENT SETINFO is not sent. A command that failed on a
// connection a failover or restart closed is sent again at once (MinRetryBackoff -1): the node is
// in this process, and go-redis's back-off, drawn at random, made when the retry landed luck (the
// same drive session's moves gave two histories). claimed says whether the
// client's connections are the lab's own (its admin, its feed), or must be claimed by whoever
// dials them (a process's hook). Hazard: options handed out must not claim, or a Locker that
// copies them into a client of its own would pass for the lab.
func memOptions(dial func() (net.Conn, error), claimed bool) *redis.Options {
	return &redis.Options{
		Addr: "127.0.0.1:0",
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			c, err := dial()
			if err == nil && claimed {
				Claim(c)
			}
			return c, err
		},
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		MinRetryBackoff:          -1,
	}
}

// embNode is one embedded lock node: a primary and its replica.
type embNode struct {
	name  string
	admin *redis.Client
	feed  *redis.Client // to the replica, while it is one

	// feedMu serialises lock commands with their replay, and with Failover and Restart. It is
	// held across round trips to both instances: a durable.Mutex, so a bubble's clock runs on
	// while a command waits for it.
	feedMu *durable.Mutex

	clockMu sync.Mutex // guards clock
	clock   time.Time  // the time the primary's clock was last set to; it never goes back

	stray atomic.Int64 // writes on connections nobody claimed, to any of its instances

	mu       sync.Mutex // guards the fields below
	primary  *mini
	replica  *mini // nil once promoted
	held     bool
	promoted bool
}

// NewEmbedded starts one lock node (a primary and its replica) and an inventory store.
func NewEmbedded() (*Embedded, error) { return NewEmbeddedNodes(1) }

// NewEmbeddedNodes starts n lock nodes, each a primary with its replica, and an inventory store.
func NewEmbeddedNodes(n int) (*Embedded, error) {
	e := &Embedded{prefix: newPrefix()}
	var err error
	if e.inventory, err = newMini(&e.invStray); err != nil {
		return nil, err
	}
	for i := range max(n, 1) {
		nd := &embNode{name: nodeName(i, n), feedMu: durable.New()}
		if nd.primary, err = newMini(&nd.stray); err != nil {
			e.Close()
			return nil, err
		}
		if nd.replica, err = newMini(&nd.stray); err != nil {
			nd.primary.close()
			e.Close()
			return nil, err
		}
		fo := memOptions(nd.replica.dial, true)
		fo.PoolSize = 1
		nd.feed = redis.NewClient(fo)
		nd.admin = redis.NewClient(memOptions(nd.dial, true))
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
func (e *Embedded) InventoryOptions() *redis.Options { return memOptions(e.inventory.dial, false) }

// Strangers says which of the run's Redis instances were sent commands on connections nobody
// claimed: no process's hook, nor the lab itself.
func (e *Embedded) Strangers(context.Context) []string {
	var out []string
	writes := func(c int64) string {
		if c == 1 {
			return "1 write"
		}
		return fmt.Sprintf("%d writes", c)
	}
	for _, n := range e.nodes {
		if c := n.strangers(); c > 0 {
			out = append(out, fmt.Sprintf("%s was sent %s on connections the lab did not hand out", n.name, writes(c)))
		}
	}
	if c := e.invStray.Load(); c > 0 {
		out = append(out, fmt.Sprintf("the inventory was sent %s on connections the lab did not hand out", writes(c)))
	}
	return out
}

// Close stops every instance.
func (e *Embedded) Close() error {
	for _, n := range e.nodes {
		n.close()
	}
	if e.inventory != nil {
		e.inventory.close()
	}
	return nil
}

// dial opens a connection to whichever instance is primary now.
func (n *embNode) dial() (net.Conn, error) {
	n.mu.Lock()
	p := n.primary
	n.mu.Unlock()
	return p.dial()
}

// Name names the node.
func (n *embNode) Name() string { return n.name }

// Options dials whichever instance is primary at dial time.
func (n *embNode) Options() *redis.Options { return memOptions(n.dial, false) }

// NewClient is a client of Options.
func (n *embNode) NewClient() *redis.Client { return redis.NewClient(n.Options()) }

// strangers counts the writes to the node on connections nobody claimed.
func (n *embNode) strangers() int64 { return n.stray.Load() }

// Hook feeds the replica (see feedHook).
func (n *embNode) Hook() redis.Hook { return feedHook{n} }

// Admin is an uncounted client of the current primary.
func (n *embNode) Admin() *redis.Client { return n.admin }

// Watch returns the node's exact watcher of key.
func (n *embNode) Watch(prefix, except string) (Watcher, error) {
	return newFrozenWatcher(n, prefix, except)
}

// CanFailover is true: an embedded lock node always starts with a replica.
func (n *embNode) CanFailover() bool { return true }

// CanRestart is true: the lab started this node.
func (n *embNode) CanRestart() bool { return true }

// Outage is short: an in-process restart or promotion takes well under a millisecond.
func (n *embNode) Outage() time.Duration { return 10 * time.Millisecond }

// Lacks reads the current primary's command table: miniredis answers COMMAND (and COMMAND INFO)
// with a fixed list of Redis 5's commands, whatever it runs.
func (n *embNode) Lacks(_ context.Context, cmds []string) ([]string, string, error) {
	n.mu.Lock()
	srv := n.primary.srv
	n.mu.Unlock()
	var lacks []string
	for _, c := range cmds {
		if !srv.IsRegisteredCommand(c) {
			lacks = append(lacks, c)
		}
	}
	return lacks, miniredisName(), nil
}

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
	n.primary.close()
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
	n.primary.close()
	fresh, err := newMini(&n.stray)
	if err != nil {
		return fmt.Errorf("redisenv: restarting %s: %w", n.name, err)
	}
	n.primary = fresh
	if n.replica != nil {
		n.replica.m.FlushAll()
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
		n.primary.close()
	}
	if n.replica != nil {
		n.replica.close()
	}
}

func (n *embNode) feeding() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.held && !n.promoted
}

// feedHook replays every command the primary answered on the replica, in the primary's order,
// until the feed is held or the replica promoted. It answers WAIT itself (see wait): miniredis
// answers 0 whatever the replica holds.
type feedHook struct{ n *embNode }

func (h feedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h feedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if Handshake(cmd) {
			// Sent on a fresh connection from inside another command, which holds feedMu.
			return next(ctx, cmd)
		}
		if cmd.Name() == "wait" {
			return h.wait(ctx, cmd)
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

// wait answers WAIT numreplicas timeout, without sending it to miniredis, with the number of
// replicas that hold every write of the connection: 1 while the feed runs (a command's replay
// is done before the command returns), 0 once HoldReplication has held it back, and 0 after a
// failover (the promoted replica has no replica of its own). As Redis does, it answers at once
// when that is at least numreplicas, and otherwise after timeout milliseconds (0: never, until
// ctx ends), waiting on the clock with no lock held, so a testing/synctest bubble's clock runs
// on meanwhile and other clients' commands go on. Hazard: a WAIT inside a pipeline or
// transaction goes to miniredis, which answers 0.
func (h feedHook) wait(ctx context.Context, cmd redis.Cmder) error {
	a := cmd.Args()
	if len(a) != 3 {
		return setErr(cmd, waitError("ERR wrong number of arguments for 'wait' command"))
	}
	want, err1 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
	ms, err2 := strconv.ParseInt(fmt.Sprint(a[2]), 10, 64)
	switch {
	case err1 != nil || err2 != nil:
		return setErr(cmd, waitError("ERR value is not an integer or out of range"))
	case ms < 0:
		return setErr(cmd, waitError("ERR timeout is negative"))
	}
	var have int64
	if h.n.feeding() {
		have = 1
	}
	if have < want {
		// Nothing brings a held feed back: the answer will not change while it waits.
		var timeout <-chan time.Time
		if ms > 0 {
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-timeout:
		case <-ctx.Done():
			return setErr(cmd, ctx.Err())
		}
	}
	switch c := cmd.(type) {
	case *redis.IntCmd:
		c.SetVal(have)
	case *redis.Cmd:
		c.SetVal(have)
	default:
		return setErr(cmd, fmt.Errorf("redisenv: WAIT sent as a %T, which the embedded node cannot answer", cmd))
	}
	return nil
}

// setErr sets err on cmd and returns it.
func setErr(cmd redis.Cmder, err error) error {
	cmd.SetErr(err)
	return err
}

// abort answers a transaction (MULTI … EXEC) that queues a command the primary does not run as
// Redis does, without sending it: each such command refused ("ERR unknown command"), the EXEC
// refused with EXECABORT, nothing done. Hazard: miniredis queues the others and runs them at
// EXEC, and its EXEC's answer then misses an entry, which go-redis waits for until its read
// timeout, having done half the transaction.
func (n *embNode) abort(cmds []redis.Cmder) error {
	if len(cmds) < 3 || cmds[0].Name() != "multi" || cmds[len(cmds)-1].Name() != "exec" {
		return nil
	}
	n.mu.Lock()
	srv := n.primary.srv
	n.mu.Unlock()
	var unknown []redis.Cmder
	for _, c := range cmds[1 : len(cmds)-1] {
		if !srv.IsRegisteredCommand(strings.ToUpper(c.Name())) {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	abort := waitError("EXECABORT Transaction discarded because of previous errors.")
	for _, c := range cmds[1:] {
		if slices.Contains(unknown, c) {
			c.SetErr(waitError(fmt.Sprintf("ERR unknown command '%v', with args beginning with: ", c.Args()[0])))
		} else {
			c.SetErr(abort)
		}
	}
	return abort
}

// waitError is an error reply the embedded node gives to a malformed WAIT, as Redis would.
type waitError string

func (e waitError) Error() string { return string(e) }
func (waitError) RedisError()     {}

func (h feedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if Handshake(cmds...) {
			return next(ctx, cmds)
		}
		if err := h.n.abort(cmds); err != nil {
			return err
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

// Mini is one embedded miniredis with nothing around it (no replica, no prefix, no watcher): a
// step's own tests use it to check the step's idea against a server they control. Its clients
// reach it through memory, so it works inside a testing/synctest bubble (made inside the bubble,
// its TTLs run on the bubble's clock).
type Mini struct {
	*miniredis.Miniredis
	x *mini
}

// NewMini starts a Mini.
func NewMini() (*Mini, error) {
	x, err := newMini(nil)
	if err != nil {
		return nil, err
	}
	return &Mini{Miniredis: x.m, x: x}, nil
}

// Options configures a new client of the Mini.
func (m *Mini) Options() *redis.Options { return memOptions(m.x.dial, true) }

// Close shuts the Mini: every connection to it breaks.
func (m *Mini) Close() { m.x.close() }
