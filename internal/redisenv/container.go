package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"
)

// ErrNoDocker is what Open wraps for the container backend when no Docker daemon answers; the
// reason follows it on the same line.
var ErrNoDocker = errors.New("redisenv: the container backend needs a running Docker daemon")

// DefaultImage is the container backend's image when $LAB_REDIS_IMAGE is empty: an official
// Redis 7 image, pulled from Docker Hub on first use.
const DefaultImage = "redis:7"

// ContainerLabel marks every container the backend starts (value: the run's prefix), so
// `docker ps -a --filter label=org.lockstep-lab.run` lists any a killed program left behind.
const ContainerLabel = "org.lockstep-lab.run"

// Container is the server backend's topology in containers started by testcontainers-go: a lock
// primary, a lock replica fed by real REPLICAOF replication, and an inventory node, all from the
// image $LAB_REDIS_IMAGE. As with Server, the replica reaches the primary through a TCP proxy in
// this process (listening on the Docker bridge's gateway address), so HoldReplication cuts the
// replication link at an exact point: everything written before it reached the replica, nothing
// written after it does. The proxy, not a network disconnect, because it is the cut already
// measured on the server backend, its cut point is one lock in this process, and the replica keeps
// its network and published port, which the clients dial once it is promoted.
//
// Hazard: the containers outlive a Go program that exits without Close. Testcontainers' reaper
// (Ryuk) removes them once the program dies, unless TESTCONTAINERS_RYUK_DISABLED=true, as in CI;
// a program that handles SIGINT must call CloseAll before it exits, and after CloseAll this
// backend opens nothing more. The containers publish their port on the host's interfaces, with
// protected mode off, while they run. The proxy listens on the bridge's gateway address, which
// must be an address of this host: a remote daemon or Docker Desktop's VM is not supported.
type Container struct {
	prefix    string
	image     string
	inventory *ctrNode
	admin     *redis.Client // uncounted, follows the primary
	proxy     *replProxy

	mu       sync.Mutex // guards the fields below; Failover holds it, so dials wait for the new primary
	primary  *ctrNode
	replica  *ctrNode      // nil once promoted
	all      []*ctrNode    // every container started, killed ones included, until Close removes them
	repl     *redis.Client // to the replica, while it is one
	promoted bool
	closed   bool

	startCtx    context.Context // parent of the starts; cancelled once Close has waited for them
	startCancel context.CancelFunc
	starting    sync.WaitGroup // the container starts in progress; Close waits for them

	closeOnce sync.Once
	closeErr  error
}

// ctrNode is one redis-server container and its address on the host.
type ctrNode struct {
	role string
	ctr  *tcredis.RedisContainer
	addr string
}

// containerStartTimeout bounds how long one container may take to start and log that it is ready.
const containerStartTimeout = 30 * time.Second

// containerPullTimeout bounds one container's start including the first pull of its image.
const containerPullTimeout = 3 * time.Minute

// quietLog keeps testcontainers' containers and providers from writing to stderr, which is the
// lab's terminal.
var quietLog = testcontainers.WithLogger(tclog.NewNoopLogger())

// silenceOnce silences testcontainers' default logger, which prints a banner on the first Docker
// connection. Hazard: it is process-wide, so other testcontainers users in the same program are
// silenced too.
var silenceOnce sync.Once

// dockerHealthy reports why no Docker daemon can be used, or nil; it is what
// testcontainers.SkipIfProviderIsNotHealthy checks, as an error instead of a skip.
func dockerHealthy(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrNoDocker, r)
		}
	}()
	p, err := testcontainers.ProviderDocker.GetProvider(quietLog)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNoDocker, oneLine(err))
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("%w: %s", ErrNoDocker, oneLine(err))
	}
	return nil
}

// reopenAfterCloseAll lets tests open containers again after a test called CloseAll.
var reopenAfterCloseAll atomic.Bool

var errClosedWhileStarting = errors.New("redisenv: the container backend was closed (CloseAll) while starting")

// NewContainer checks that a Docker daemon answers, starts the three containers from
// $LAB_REDIS_IMAGE (default DefaultImage), points the replica at the primary through a holdable
// proxy and waits until the replica receives the primary's writes.
func NewContainer() (*Container, error) {
	silenceOnce.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
	gen := closeAllGen()
	if gen > 0 && !reopenAfterCloseAll.Load() {
		// The program is exiting (CloseAll is its interrupt handler's last act): a container
		// created now would be completed by the daemon after the process is gone.
		return nil, errClosedWhileStarting
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := dockerHealthy(ctx)
	cancel()
	if err != nil {
		return nil, err
	}
	c := &Container{prefix: newPrefix(), image: os.Getenv("LAB_REDIS_IMAGE")}
	if c.image == "" {
		c.image = DefaultImage
	}
	c.startCtx, c.startCancel = context.WithCancel(context.Background())
	roles := []string{"lock-primary", "lock-replica", "inventory"}
	nodes := []**ctrNode{&c.primary, &c.replica, &c.inventory}
	c.starting.Add(len(roles))
	// Registered before the first container exists: CloseAll waits for the starts and removes
	// whatever they created. An Open that began before a CloseAll and was not yet registered
	// gives up here instead of starting containers in a program that is exiting.
	if !registerSince(c, gen) {
		c.startCancel()
		return nil, errClosedWhileStarting
	}
	fail := func(err error) (*Container, error) {
		c.Close()
		return nil, err
	}
	var errs [3]error
	for i, role := range roles {
		go func() {
			defer c.starting.Done()
			n, err := c.startNode(role)
			c.mu.Lock()
			if n != nil {
				c.all = append(c.all, n)
				*nodes[i] = n
			}
			errs[i] = err
			c.mu.Unlock()
		}()
	}
	c.starting.Wait()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fail(errClosedWhileStarting)
	}
	for _, err := range errs { // the first is enough, on one line
		if err != nil {
			return fail(err)
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	gateway, err := bridgeGateway(ctx, c.replica.ctr)
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gateway, "0"))
	if err != nil {
		return fail(fmt.Errorf("redisenv: the replication proxy cannot listen on the Docker bridge's gateway %s: %w", gateway, err))
	}
	proxy := &replProxy{ln: ln, target: c.primary.addr, conns: map[net.Conn]struct{}{}}
	proxy.wg.Add(1)
	go proxy.accept()
	adminOpts := c.LockOptions() // before c.mu: its dialer takes c.mu
	c.mu.Lock()                  // Close takes these under c.mu
	c.proxy = proxy
	c.admin = redis.NewClient(adminOpts)
	c.repl = redis.NewClient(&redis.Options{Addr: c.replica.addr, PoolSize: 2, MaxRetries: -1})
	closed = c.closed
	c.mu.Unlock()
	if closed { // Close may have run before these were set
		c.admin.Close()
		c.repl.Close()
		proxy.close()
		return fail(errClosedWhileStarting)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := c.repl.SlaveOf(ctx, gateway, port).Err(); err != nil {
		return fail(fmt.Errorf("redisenv: REPLICAOF on the lock replica container: %w", err))
	}
	if err := waitLinkUp(ctx, c.repl); err != nil {
		return fail(err)
	}
	if err := waitStream(ctx, c.primary.addr, c.repl, c.prefix); err != nil {
		return fail(err)
	}
	return c, nil
}

// startNode starts one redis-server container. The command is given in full, so an image without
// a shell (the CI image is FROM scratch) works. Readiness is the server's log line, then reachable
// finds the published port answering PING: the module's default port check runs /bin/sh inside
// the container and dials the host testcontainers guesses, which can be the wrong one.
func (c *Container) startNode(role string) (*ctrNode, error) {
	ctx, cancel := context.WithTimeout(c.startCtx, containerPullTimeout)
	defer cancel()
	ctr, err := tcredis.Run(ctx, c.image,
		quietLog,
		testcontainers.WithCmd("redis-server",
			"--port", "6379",
			"--protected-mode", "no",
			"--dir", "/tmp",
			"--save", "",
			"--appendonly", "no",
			"--repl-diskless-sync", "no", // see tryStartNode: a diskless sync may hold writes back 1 s
			"--repl-diskless-sync-delay", "0",
			"--notify-keyspace-events", KeyspaceEvents, // the referee's watcher reads them
		),
		testcontainers.WithWaitStrategy(
			wait.ForLog("Ready to accept connections").WithStartupTimeout(containerStartTimeout),
		),
		testcontainers.WithLabels(map[string]string{ContainerLabel: c.prefix, "org.lockstep-lab.role": role}),
	)
	if err != nil {
		if ctr != nil {
			ctr.Terminate(context.Background(), testcontainers.StopTimeout(0))
		}
		return nil, fmt.Errorf("redisenv: starting the %s container from %s: %s", role, c.image, oneLine(err))
	}
	addr, err := reachable(ctx, ctr)
	if err != nil {
		ctr.Terminate(context.Background(), testcontainers.StopTimeout(0))
		return nil, fmt.Errorf("redisenv: the %s container: %w", role, err)
	}
	return &ctrNode{role: role, ctr: ctr, addr: addr}, nil
}

// hostSeen is the host name or address that last reached a container's published port.
var hostSeen struct {
	sync.Mutex
	host string
}

// reachable returns the host:port where ctr's published Redis port answers PING. The candidates
// are the last host that worked, 127.0.0.1 when the daemon is a local socket, and the host
// testcontainers names. Hazard: testcontainers, when it runs inside a container (/.dockerenv),
// names the container's default gateway, which is wrong when dockerd runs in that same container
// (as in CI) and unreachable from a sandbox; 127.0.0.1 is right there. Set
// TESTCONTAINERS_HOST_OVERRIDE to force a host.
func reachable(ctx context.Context, ctr *tcredis.RedisContainer) (string, error) {
	port, err := ctr.MappedPort(ctx, "6379/tcp")
	if err != nil {
		return "", err
	}
	named, err := ctr.Host(ctx)
	if err != nil {
		return "", err
	}
	hostSeen.Lock()
	seen := hostSeen.host
	hostSeen.Unlock()
	var hosts []string
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	add(seen)
	if _, override := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !override {
		if dh := os.Getenv("DOCKER_HOST"); dh == "" || strings.HasPrefix(dh, "unix://") {
			add("127.0.0.1")
		}
	}
	add(named)
	var last error
	deadline := time.Now().Add(5 * time.Second)
	for delay := time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 50*time.Millisecond) {
		for _, h := range hosts {
			addr := net.JoinHostPort(h, port.Port())
			if last = ping(addr); last == nil {
				hostSeen.Lock()
				hostSeen.host = h
				hostSeen.Unlock()
				return addr, nil
			}
		}
		time.Sleep(delay)
	}
	return "", fmt.Errorf("its port %s answers PING on none of %v (set TESTCONTAINERS_HOST_OVERRIDE to the host that reaches it): %v", port.Port(), hosts, last)
}

// bridgeGateway is the gateway address of ctr's network: the host as the container sees it.
func bridgeGateway(ctx context.Context, ctr *tcredis.RedisContainer) (string, error) {
	info, err := ctr.Inspect(ctx)
	if err != nil {
		return "", fmt.Errorf("redisenv: inspecting the lock replica container: %w", err)
	}
	if info.NetworkSettings != nil {
		for _, nw := range info.NetworkSettings.Networks {
			if nw != nil && nw.Gateway.IsValid() {
				return nw.Gateway.String(), nil
			}
		}
	}
	return "", errors.New("redisenv: the lock replica container has no network gateway to reach the host through")
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
			return fmt.Errorf("redisenv: the lock replica container did not sync with the primary (link %q)", infoField(info, "master_link_status"))
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitStream writes a probe key on the primary and waits until the replica has it.
func waitStream(ctx context.Context, primary string, repl *redis.Client, prefix string) error {
	pc := redis.NewClient(&redis.Options{Addr: primary, PoolSize: 1, MaxRetries: -1})
	defer pc.Close()
	probe := prefix + "sync:probe"
	if err := pc.Set(ctx, probe, 1, 0).Err(); err != nil {
		return fmt.Errorf("redisenv: writing to the lock primary container: %w", err)
	}
	defer pc.Del(context.WithoutCancel(ctx), probe)
	for repl.Exists(ctx, probe).Val() == 0 {
		select {
		case <-ctx.Done():
			return errors.New("redisenv: the lock replica container is linked but receives no writes from the primary")
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Backend returns "container".
func (c *Container) Backend() string { return "container" }

// Prefix returns the run's key prefix.
func (c *Container) Prefix() string { return c.prefix }

// Image is the image the containers run.
func (c *Container) Image() string { return c.image }

func (c *Container) primaryAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.primary.addr
}

// LockOptions dials whichever container is primary at dial time; a dial during Failover waits for
// the promoted replica.
func (c *Container) LockOptions() *redis.Options {
	return followPrimary(c.primaryAddr)
}

// Nodes is the one lock node: the primary and its replica.
func (c *Container) Nodes() []Node { return []Node{containerNode{c}} }

// NewContainerNodes starts n lock nodes in containers. Hazard: only one is built yet (see
// NewServerNodes).
func NewContainerNodes(n int) (*Container, error) {
	if n > 1 {
		return nil, fmt.Errorf("%w: the container backend starts one lock node for now", ErrSingleNode)
	}
	return NewContainer()
}

// Restart restarts the lock primary without persistence.
func (n containerNode) Restart(ctx context.Context) error {
	return errors.New("redisenv: the container backend cannot restart a node yet")
}

// containerNode is the Container's lock primary and replica as a Node.
type containerNode struct{ c *Container }

func (n containerNode) Name() string                       { return "lock" }
func (n containerNode) Options() *redis.Options            { return n.c.LockOptions() }
func (n containerNode) Hook() redis.Hook                   { return nil }
func (n containerNode) Admin() *redis.Client               { return n.c.admin }
func (n containerNode) CanFailover() bool                  { return true }
func (n containerNode) HoldReplication()                   { n.c.HoldReplication() }
func (n containerNode) Failover(ctx context.Context) error { return n.c.Failover(ctx) }
func (n containerNode) Watch(key string) (Watcher, error) {
	return newNotifyWatcher(key, 0, n.c.LockOptions(), n.c.admin)
}

// InventoryOptions dials the inventory container.
func (c *Container) InventoryOptions() *redis.Options {
	return &redis.Options{Addr: c.inventory.addr}
}

// Admin is an uncounted client of the current lock primary.
func (c *Container) Admin() *redis.Client { return c.admin }

// Exists sends EXISTS to the current primary on the admin client.
func (c *Container) Exists(ctx context.Context, key string) (bool, error) {
	n, err := c.admin.Exists(ctx, key).Result()
	return n > 0, err
}

// HoldReplication waits (up to a second) until the replica has applied every write the primary
// has answered, then cuts the replication link at the proxy: no byte the primary sends after that
// reaches the replica, and the replica cannot reconnect until Failover promotes it.
func (c *Container) HoldReplication() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.replica == nil || c.closed || c.proxy.isHeld() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	awaitCatchUp(ctx, c.primary.addr, c.repl)
	c.proxy.hold()
}

// Failover SIGKILLs the lock primary's container (docker kill), promotes the replica with
// REPLICAOF NO ONE and waits until it accepts a write. Clients' broken connections redial the
// promoted replica. The killed container stays (exited) until Close removes it.
func (c *Container) Failover(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return errors.New("redisenv: the container backend is closed")
	case c.promoted:
		return errors.New("redisenv: the replica was already promoted; there is nothing left to fail over to")
	}
	c.proxy.hold()
	if err := c.primary.kill(ctx); err != nil {
		return err
	}
	c.proxy.close()
	if err := c.repl.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("redisenv: REPLICAOF NO ONE on the lock replica container: %w", err)
	}
	probe := c.prefix + "failover:probe"
	for {
		err := c.repl.Set(ctx, probe, 1, time.Second).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("redisenv: the promoted replica does not accept writes: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
	c.repl.Del(ctx, probe)
	// The killed container stays in c.all, exited, until Close removes it.
	c.primary, c.replica, c.promoted = c.replica, nil, true
	return nil
}

// kill sends SIGKILL to the node's container and waits until Docker reports it stopped.
func (n *ctrNode) kill(ctx context.Context) error {
	dc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("redisenv: a Docker client to kill the %s: %w", n.role, err)
	}
	defer dc.Close()
	id := n.ctr.GetContainerID()
	if _, err := dc.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		return fmt.Errorf("redisenv: killing the %s container: %w", n.role, err)
	}
	for {
		st, err := dc.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil || st.Container.State == nil || !st.Container.State.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisenv: the %s container is still running after SIGKILL", n.role)
		case <-time.After(time.Millisecond):
		}
	}
}

// IDs returns the ids of every container the Container started and has not yet removed,
// killed ones included.
func (c *Container) IDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for _, n := range c.all {
		ids = append(ids, n.ctr.GetContainerID())
	}
	return ids
}

// Close removes every container (killed ones included) and closes the clients and the proxy. It
// may be called more than once, and from CloseAll concurrently with the run's own Close or with
// NewContainer: it waits for the container starts in progress (cancelling them could leave a
// container the daemon created after the client gave up), so one created while the program is
// being interrupted is removed too.
func (c *Container) Close() error {
	c.closeOnce.Do(func() {
		// Unregistered only once everything is removed: a CloseAll meanwhile calls Close, which
		// waits for this one, so the program cannot exit while a container is being removed.
		defer unregister(c)
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		c.starting.Wait()
		c.startCancel()
		c.mu.Lock()
		admin, repl, proxy, nodes := c.admin, c.repl, c.proxy, c.all
		c.all = nil
		c.mu.Unlock()
		if admin != nil {
			admin.Close()
		}
		if repl != nil {
			repl.Close()
		}
		if proxy != nil {
			proxy.close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, len(nodes))
		for i, n := range nodes {
			wg.Go(func() {
				if err := n.ctr.Terminate(ctx, testcontainers.StopTimeout(0)); err != nil {
					errs[i] = fmt.Errorf("redisenv: removing the %s container: %w", n.role, err)
				}
			})
		}
		wg.Wait()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
