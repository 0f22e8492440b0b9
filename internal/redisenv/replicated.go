package redisenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is one redis-server a backend started: a process on a loopback port (server) or a
// container (container). It is all that differs between those backends; a replNode does the rest.
// Hazard: its address must not change for as long as it lives, restarts included: clients, the
// replication proxy and the referee's watcher redial it.
type redisServer interface {
	// addr is the host:port where this process reaches the server.
	addr() string
	// role names the server in messages ("lock primary", "lock-2 replica", "inventory").
	role() string
	// kill stops the server at once (SIGKILL) and returns once it is gone, so every connection
	// to it has broken.
	kill(ctx context.Context) error
	// restart kills the server and starts it again at the same address with no key: it keeps
	// nothing on disk from its previous life (a replica's full sync leaves an RDB file behind,
	// which redis-server would load at start). It returns once the new server answers.
	restart(ctx context.Context) error
	// remove kills the server and removes what it leaves behind (a temp dir, a container).
	remove(ctx context.Context) error
	// outage is the longest its kill or restart was measured to take on a loaded machine.
	outage() time.Duration
}

// redisArgs are the flags every redis-server of the server and container backends runs with,
// after its port and dir.
func redisArgs() []string {
	return []string{
		"--protected-mode", "no",
		// No persistence, so a restart forgets every key (with an emptied dir: see
		// redisServer.restart).
		"--save", "",
		"--appendonly", "no",
		// Disk-based full sync: a diskless one (the 7.0 default) streams writes only after the
		// replica's first REPLCONF ACK, which races the primary reaping its RDB child; losing
		// that race (1 start in 5 here) holds every write back for the replica's 1 s cron.
		"--repl-diskless-sync", "no",
		"--repl-diskless-sync-delay", "0",
		// The server's cron 100 times a second, not 10: a full sync's snapshot reaches the
		// replica only once the cron has noticed its child exit, so at the default every start
		// and restart waited up to 100 ms more for its replica (a restart's relink took 60-185
		// ms at hz 10, 21-23 ms at hz 100). Keys also expire actively 10 times as often: an
		// expiry's keyspace event comes closer to its TTL.
		"--hz", "100",
		"--notify-keyspace-events", KeyspaceEvents, // the referee's watcher reads them
	}
}

// startTimeout bounds how long a redis-server may take to answer PING, and a replica to sync.
const startTimeout = 10 * time.Second

// replNode is one lock node of the server and container backends: a primary, and a replica that
// replicates from it by real REPLICAOF replication through a replProxy in this process, so
// HoldReplication can cut the link at an exact point: everything written before it reached the
// replica, nothing written after it does. The proxy, not a network disconnect or SIGSTOP, because
// it is the cut measured to lose the held write every time (a stopped replica still applies the
// bytes waiting in its socket buffer when it resumes), and its cut point is one lock in this
// process.
//
// On the sentinel backend, Sentinels (sent) watch the node: they, not the lab, promote the
// replica once Failover has killed the primary, and buyers' clients (NewClient) ask them where
// the primary is.
//
// Hazard: the node does not own its redis-servers (nor its Sentinels); the fleet that started
// them removes them.
type replNode struct {
	name   string
	prefix string
	host   string        // where the proxy listens: this host as the replica reaches it
	stall  bool          // a held link stays open (see replProxy.stall)
	admin  *redis.Client // uncounted, follows the primary
	sent   *sentinels    // the node's Sentinels; nil but on the sentinel backend (set before the node is shared)

	mu       sync.Mutex // guards the fields below; Failover and Restart hold it, so dials wait for the node to be back
	primary  redisServer
	replica  redisServer   // nil once promoted
	repl     *redis.Client // to the replica, while it is one
	proxy    *replProxy    // the replica's replication link; nil once promoted
	promoted bool
	closed   bool
}

// newReplNode makes primary and replica one lock node: it points the replica at the primary
// through a proxy listening on host (one that keeps a held link open, if stall) and waits until
// the replica receives the primary's writes. On an error it closes what it opened; the servers
// are the caller's.
func newReplNode(ctx context.Context, name, prefix string, primary, replica redisServer, host string, stall bool) (*replNode, error) {
	n := &replNode{name: name, prefix: prefix, host: host, stall: stall, primary: primary, replica: replica}
	n.admin = redis.NewClient(claiming(n.Options()))
	n.repl = redis.NewClient(claiming(&redis.Options{Addr: replica.addr(), PoolSize: 2, MaxRetries: -1}))
	n.mu.Lock()
	err := n.link(ctx)
	n.mu.Unlock()
	if err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

// link points the replica at the primary through the proxy (a fresh one if there is none) and
// waits until the replica receives the primary's writes. The caller holds mu.
func (n *replNode) link(ctx context.Context) error {
	if n.proxy == nil {
		p, err := newReplProxy(n.host, n.primary.addr(), n.stall)
		if err != nil {
			return err
		}
		n.proxy = p
	}
	host, port, _ := net.SplitHostPort(n.proxy.addr())
	if err := n.repl.SlaveOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("redisenv: REPLICAOF on %s's replica: %w", n.name, err)
	}
	if err := waitLinkUp(ctx, n.repl); err != nil {
		return fmt.Errorf("redisenv: %s's replica did not sync with its primary: %w%s", n.name, err, lastWords(n.replica))
	}
	if err := waitStream(ctx, n.primary.addr(), n.repl, n.prefix); err != nil {
		return fmt.Errorf("redisenv: %s's replica: %w", n.name, err)
	}
	return nil
}

// lastWords is ": " and the last line a server wrote, where the backend keeps it, else "".
func lastWords(s redisServer) string {
	if t, ok := s.(interface{ lastLine() string }); ok {
		return ": " + t.lastLine()
	}
	return ""
}

func (n *replNode) primaryAddr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.primary.addr()
}

// Name names the node ("lock", or "lock-1"… in a quorum).
func (n *replNode) Name() string { return n.name }

// Options dials whichever server is primary at dial time; a dial during Failover or Restart waits
// until the node is back.
func (n *replNode) Options() *redis.Options { return followPrimary(n.primaryAddr) }

// NewClient is, on the sentinel backend, a failover client that asks the node's Sentinels where
// the primary is and follows their switch; a client of Options on the others.
func (n *replNode) NewClient() *redis.Client {
	if n.sent != nil {
		return n.sent.newClient()
	}
	return redis.NewClient(n.Options())
}

// Hook is nil: the replica replicates by itself.
func (n *replNode) Hook() redis.Hook { return nil }

// Admin is an uncounted client of the current primary.
func (n *replNode) Admin() *redis.Client { return n.admin }

// CanFailover is true: the node starts with a replica.
func (n *replNode) CanFailover() bool { return true }

// CanRestart is true: the lab started this node.
func (n *replNode) CanRestart() bool { return true }

// Outage is the primary's (failover and restart both wait for its kill or restart), or, where
// Sentinels watch the node, the longest their election was measured to take (sentinelOutage).
func (n *replNode) Outage() time.Duration {
	if n.sent != nil {
		return max(sentinelOutage, n.primary.outage())
	}
	return n.primary.outage()
}

// Lacks asks the current primary (COMMAND INFO, INFO server).
func (n *replNode) Lacks(ctx context.Context, cmds []string) ([]string, string, error) {
	return askLacks(ctx, n.admin, cmds)
}

// Watch watches the keys under prefix through the node's keyspace events (see notifyWatcher). It checks that the
// primary publishes them: a node that did not would look unchanged to the referee for ever.
func (n *replNode) Watch(prefix, except string) (Watcher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
	defer cancel()
	if !publishesKeyspaceEvents(ctx, n.admin) {
		return nil, fmt.Errorf("redisenv: %s does not publish the keyspace events the referee reads (notify-keyspace-events %s)", n.name, KeyspaceEvents)
	}
	return newNotifyWatcher(prefix, except, 0, n.Options(), n.admin)
}

// HoldReplication waits (up to a second) until the replica has applied every write the primary
// has answered, then cuts the replication link at the proxy: no byte the primary sends after that
// reaches the replica, and the replica cannot relink until Failover promotes it. Where Sentinels
// watch the node, the replica is not told (see replProxy.stall): its link stays open and silent
// until the primary dies or its repl-timeout (60 s) passes. Hazard: Sentinel promotes no replica
// whose link has been down for more than 10 × down-after-milliseconds before the primary's
// death; a failover more than that after a hold closed by repl-timeout fails.
func (n *replNode) HoldReplication() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.replica == nil || n.closed || n.proxy.isHeld() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	awaitCatchUp(ctx, n.primary.addr(), n.repl) // n.mu is held: dial the primary directly
	n.proxy.hold()
}

// Failover SIGKILLs the primary, promotes the replica with REPLICAOF NO ONE and waits until it
// accepts a write. Clients' broken connections redial the promoted replica. Where Sentinels watch
// the node, the lab sends no REPLICAOF: it waits for their own election and promotion, until
// every one of them names the replica as the primary (sentinels.awaitPromotion), and their
// failover clients find it there. The killed server stays (dead) until the fleet removes it.
func (n *replNode) Failover(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.closed:
		return fmt.Errorf("redisenv: %s is closed", n.name)
	case n.promoted:
		return errors.New("redisenv: the replica was already promoted; there is nothing left to fail over to")
	}
	n.proxy.hold()
	if err := n.primary.kill(ctx); err != nil {
		return err
	}
	n.proxy.close()
	if n.sent != nil {
		if err := n.sent.awaitPromotion(ctx, n.replica); err != nil {
			return err
		}
	} else if err := n.repl.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("redisenv: REPLICAOF NO ONE on %s's replica: %w", n.name, err)
	}
	probe := n.prefix + "failover:probe"
	for {
		err := n.repl.Set(ctx, probe, 1, time.Second).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("redisenv: %s's promoted replica does not accept writes: %w", n.name, err)
		}
		time.Sleep(time.Millisecond)
	}
	n.repl.Del(ctx, probe)
	n.primary, n.replica, n.proxy, n.promoted = n.replica, nil, nil, true
	return nil
}

// Restart restarts the primary without persistence (see redisServer.restart): every connection
// to it breaks, and it comes back at the same address with no key. Its replica follows it: the
// restarted primary has a new replication id, so the replica's next sync is a full one, which
// empties it, as a real replica resyncing from an empty primary is emptied. Restart makes the
// replica relink at once (REPLICAOF NO ONE, then REPLICAOF the proxy) instead of at its next
// once-a-second attempt, and returns once it receives the primary's writes again. A held link
// stays held, as a partition outlives a restart: the replica is emptied all the same (FLUSHALL),
// and hears nothing more until Failover. Where Sentinels watch the node, Restart returns once
// every one of them is linked to the restarted primary again (sentinels.awaitSeen): a Sentinel
// that failed the node over meanwhile makes it fail. Hazard: until Restart returns, a dial of the
// node waits.
func (n *replNode) Restart(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Errorf("redisenv: %s is closed", n.name)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := n.restart(ctx); err != nil {
		return err
	}
	if n.sent != nil {
		return n.sent.awaitSeen(ctx, n.primary.addr())
	}
	return nil
}

// restart is Restart less the Sentinels; the caller holds mu.
func (n *replNode) restart(ctx context.Context) error {
	if err := n.primary.restart(ctx); err != nil {
		return fmt.Errorf("redisenv: restarting %s's primary: %w", n.name, err)
	}
	if n.replica == nil {
		return nil
	}
	if err := n.repl.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("redisenv: REPLICAOF NO ONE on %s's replica: %w", n.name, err)
	}
	if !n.proxy.isHeld() {
		return n.link(ctx)
	}
	if err := n.repl.FlushAll(ctx).Err(); err != nil {
		return fmt.Errorf("redisenv: emptying %s's held replica: %w", n.name, err)
	}
	host, port, _ := net.SplitHostPort(n.proxy.addr())
	if err := n.repl.SlaveOf(ctx, host, port).Err(); err != nil {
		return fmt.Errorf("redisenv: REPLICAOF on %s's replica: %w", n.name, err)
	}
	return nil
}

// close closes the node's clients and proxy, after any Failover or Restart in progress; the
// node's operations fail from then on. Its servers are the fleet's to remove.
func (n *replNode) close() {
	n.mu.Lock()
	n.closed = true
	proxy := n.proxy
	n.proxy = nil
	n.mu.Unlock()
	n.admin.Close()
	n.repl.Close()
	if proxy != nil {
		proxy.close()
	}
	if n.sent != nil {
		n.sent.close()
	}
}

// waitLinkUp waits until the replica repl reports master_link_status:up.
func waitLinkUp(ctx context.Context, repl *redis.Client) error {
	for {
		info, err := repl.Info(ctx, "replication").Result()
		if err == nil && infoField(info, "master_link_status") == "up" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("link %q after %w", infoField(info, "master_link_status"), ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitStream writes a probe key on the primary and waits until the replica repl has it: the link
// being up does not yet mean the primary streams its writes.
func waitStream(ctx context.Context, primary string, repl *redis.Client, prefix string) error {
	pc := redis.NewClient(claiming(&redis.Options{Addr: primary, PoolSize: 1, MaxRetries: -1}))
	defer pc.Close()
	probe := prefix + "sync:probe"
	if err := pc.Set(ctx, probe, 1, 0).Err(); err != nil {
		return fmt.Errorf("writing to the primary: %w", err)
	}
	defer pc.Del(context.WithoutCancel(ctx), probe)
	for repl.Exists(ctx, probe).Val() == 0 {
		select {
		case <-ctx.Done():
			return errors.New("linked, but it receives no writes from the primary")
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// awaitCatchUp waits until repl's replication offset reaches the primary's, or ctx ends: a node
// calls it before it cuts the replication link.
func awaitCatchUp(ctx context.Context, primary string, repl *redis.Client) {
	pc := redis.NewClient(claiming(&redis.Options{Addr: primary, PoolSize: 1, MaxRetries: -1}))
	defer pc.Close()
	info, err := pc.Info(ctx, "replication").Result()
	if err != nil {
		return
	}
	want, err := strconv.ParseInt(infoField(info, "master_repl_offset"), 10, 64)
	if err != nil {
		return
	}
	for {
		info, err := repl.Info(ctx, "replication").Result()
		if err == nil {
			if got, err := strconv.ParseInt(infoField(info, "slave_repl_offset"), 10, 64); err == nil && got >= want {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// replProxy forwards the replica's replication connection to the primary. hold cuts it: bytes
// from the primary are written to the replica only while not held, under the same lock hold
// takes, so nothing passes once hold has returned.
//
// A stalling proxy (stall) keeps a held connection open and drops what the primary sends, as a
// partition the replica has not noticed yet: the replica reports its link up until the primary
// dies (the proxy then closes it) or its repl-timeout passes. Sentinel needs that: it promotes
// no replica whose link has been down for more than 10 × down-after-milliseconds, and a link
// closed at the hold would count from the hold.
type replProxy struct {
	ln     net.Listener
	target string
	stall  bool
	wg     sync.WaitGroup

	mu     sync.Mutex
	held   bool
	closed bool
	conns  map[net.Conn]struct{}
}

// newReplProxy listens on a free port of host and forwards each connection to target; a held
// connection stays open if stall.
func newReplProxy(host, target string, stall bool) (*replProxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("redisenv: the replication proxy cannot listen on %s: %w", host, err)
	}
	p := &replProxy{ln: ln, target: target, stall: stall, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *replProxy) addr() string { return p.ln.Addr().String() }

func (p *replProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err == nil {
			Claim(up) // the replication link, seen by the primary as a client
		}
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		if p.held || p.closed {
			p.mu.Unlock()
			down.Close()
			up.Close()
			continue
		}
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.toReplica(up, down)
		go func() { // the replica's REPLCONF ACKs and commands; harmless to pass through
			defer p.wg.Done()
			io.Copy(up, down)
			up.Close()
			down.Close()
			p.forget(up, down)
		}()
	}
}

// toReplica copies the primary's stream to the replica while the link is not held; once held,
// a stalling proxy reads on and drops it until the primary's end closes.
func (p *replProxy) toReplica(up, down net.Conn) {
	defer p.wg.Done()
	defer p.forget(up, down)
	defer up.Close()
	defer down.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if p.closed || (p.held && !p.stall) {
				p.mu.Unlock()
				return
			}
			if p.held {
				p.mu.Unlock()
				if err != nil {
					return
				}
				continue
			}
			down.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, werr := down.Write(buf[:n])
			p.mu.Unlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forget drops closed connections from the set hold closes.
func (p *replProxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *replProxy) isHeld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// hold cuts every link (a stalling proxy keeps them open, silent) and refuses new ones.
func (p *replProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	if !p.stall {
		p.closeConns()
	}
}

// closeConns closes every link; the caller holds mu.
func (p *replProxy) closeConns() {
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// close stops the proxy, closes every link and waits for its goroutines.
func (p *replProxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.held = true
	p.closeConns()
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
