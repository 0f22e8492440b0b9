//go:build container

package redisenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"
)

// openContainer is Open's container backend: this build has it (-tags container).
func openContainer(n int) (Env, error) {
	c, err := NewContainerNodes(n)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Container is the server backend's topology in containers started by testcontainers-go, from the
// image $LAB_REDIS_IMAGE: lock nodes, each a primary with a replica fed by real REPLICAOF
// replication, and an inventory node. As with Server, a replica reaches its primary through a TCP
// proxy in this process (a replNode's, listening on the Docker bridge's gateway address), so
// HoldReplication cuts the replication link at an exact point. The proxy, not a network
// disconnect, because it is the cut already measured on the server backend, its cut point is one
// lock in this process, and the replica keeps its network and published port, which the clients
// dial once it is promoted.
//
// Hazard: the containers outlive a Go program that exits without Close. Testcontainers' reaper
// (Ryuk) removes them once the program dies, unless TESTCONTAINERS_RYUK_DISABLED=true, as in CI;
// a program that handles SIGINT must call CloseAll before it exits, and after CloseAll this
// backend opens nothing more. The containers publish their port on the host's interfaces, with
// protected mode off, while they run. The proxy listens on the bridge's gateway address, which
// must be an address of this host: a remote daemon or Docker Desktop's VM is not supported.
type Container struct {
	*fleet
	image string
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

// NewContainer starts one lock node (a primary and its replica) and the inventory node in
// containers.
func NewContainer() (*Container, error) { return NewContainerNodes(1) }

// NewContainerNodes checks that a Docker daemon answers, then starts n lock nodes, each a primary
// with its replica and independent of the others, and the inventory node: 2n+1 containers from
// $LAB_REDIS_IMAGE (default DefaultImage), started at once.
func NewContainerNodes(n int) (*Container, error) {
	silenceOnce.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
	if closeAllGen() > 0 && !reopenAfterCloseAll.Load() {
		return nil, errExiting // before asking the daemon anything
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dockerHealthy(ctx); err != nil {
		return nil, err
	}
	l := &ctrLauncher{image: os.Getenv("LAB_REDIS_IMAGE"), prefix: newPrefix()}
	if l.image == "" {
		l.image = DefaultImage
	}
	dc, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoDocker, oneLine(err))
	}
	l.dc = dc.Client
	f, err := openFleet("container", l.prefix, l, n, nil)
	if err != nil {
		return nil, err
	}
	return &Container{fleet: f, image: l.image}, nil
}

// Image is the image the containers run.
func (c *Container) Image() string { return c.image }

// IDs returns the ids of every container the Container started and has not yet removed,
// killed ones included.
func (c *Container) IDs() []string {
	var ids []string
	for _, s := range c.servers() {
		ids = append(ids, s.(*ctr).c.GetContainerID())
	}
	return ids
}

// ctrLauncher starts redis-server containers from one image.
type ctrLauncher struct {
	image  string
	prefix string         // the run's, as every container's ContainerLabel
	dc     *client.Client // kills and restarts containers
}

// start starts one redis-server container. The command is given in full, so an image without a
// shell (the CI image is FROM scratch) works. Readiness is the server's log line, then reachable
// finds the published port answering PING: the module's default port check runs /bin/sh inside
// the container and dials the host testcontainers guesses, which can be the wrong one.
//
// Its port is published on a host port chosen here, not by Docker, which gives a restarted
// container a new ephemeral port; if another program takes that port first, start retries on a
// fresh one. Its dir is a tmpfs, so a restarted container finds no RDB file from a full sync
// (a container's own filesystem survives a restart, and redis-server would load the file).
//
// The start is not cancelled with ctx: the daemon could finish creating a container after its
// client gave up, and nobody would remove it. The fleet's Close waits for it instead.
func (l *ctrLauncher) start(ctx context.Context, role string) (redisServer, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), containerPullTimeout)
	defer cancel()
	var last error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("redisenv: finding a free port for the %s container: %w", role, err)
		}
		c, err := tcredis.Run(ctx, l.image,
			quietLog,
			testcontainers.WithCmd(append([]string{"redis-server", "--port", "6379", "--dir", "/tmp"}, redisArgs()...)...),
			testcontainers.WithTmpfs(map[string]string{"/tmp": "rw"}),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{
					network.MustParsePort("6379/tcp"): {{HostPort: strconv.Itoa(port)}},
				}
			}),
			testcontainers.WithWaitStrategy(
				wait.ForLog("Ready to accept connections").WithStartupTimeout(containerStartTimeout),
			),
			testcontainers.WithLabels(map[string]string{ContainerLabel: l.prefix, "org.lockstep-lab.role": role}),
		)
		if err != nil {
			if c != nil {
				c.Terminate(context.Background(), testcontainers.StopTimeout(0))
			}
			last = fmt.Errorf("redisenv: starting the %s container from %s: %s", role, l.image, oneLine(err))
			if portTaken(err) {
				continue
			}
			return nil, last
		}
		addr, err := reachable(ctx, c)
		if err != nil {
			c.Terminate(context.Background(), testcontainers.StopTimeout(0))
			return nil, fmt.Errorf("redisenv: the %s container: %w", role, err)
		}
		return &ctr{l: l, name: role, c: c, address: addr}, nil
	}
	return nil, last
}

// portTaken reports whether a container failed to start because its host port was taken.
func portTaken(err error) bool {
	s := err.Error()
	return strings.Contains(s, "port is already allocated") || strings.Contains(s, "address already in use")
}

// proxyHost is the gateway address of the replica's network: the host as the container sees it.
func (l *ctrLauncher) proxyHost(ctx context.Context, replica redisServer) (string, error) {
	info, err := replica.(*ctr).c.Inspect(ctx)
	if err != nil {
		return "", fmt.Errorf("redisenv: inspecting the %s container: %w", replica.role(), err)
	}
	if info.NetworkSettings != nil {
		for _, nw := range info.NetworkSettings.Networks {
			if nw != nil && nw.Gateway.IsValid() {
				return nw.Gateway.String(), nil
			}
		}
	}
	return "", fmt.Errorf("redisenv: the %s container has no network gateway to reach the host through", replica.role())
}

func (l *ctrLauncher) close() {
	if l.dc != nil {
		l.dc.Close()
	}
}

// ctr is one redis-server container and its address on the host.
type ctr struct {
	l       *ctrLauncher
	name    string
	c       *tcredis.RedisContainer
	address string
}

func (c *ctr) addr() string { return c.address }
func (c *ctr) role() string { return c.name }

// kill sends SIGKILL to the container and waits until Docker reports it stopped. The container
// stays, exited, until remove.
func (c *ctr) kill(ctx context.Context) error {
	id := c.c.GetContainerID()
	if _, err := c.l.dc.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !strings.Contains(err.Error(), "is not running") {
		return fmt.Errorf("redisenv: killing the %s container: %w", c.name, err)
	}
	for {
		st, err := c.l.dc.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil || st.Container.State == nil || !st.Container.State.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisenv: the %s container is still running after SIGKILL", c.name)
		case <-time.After(time.Millisecond):
		}
	}
}

// outage: a docker kill took 138–209 ms and a restart 1–2 s on a quiet machine; a restart took
// 3.8 s while another container suite ran.
func (c *ctr) outage() time.Duration { return 4 * time.Second }

// restart kills the container and starts it again: the same host port (chosen at start), an
// empty tmpfs dir, so no key. It returns once the server answers PING on the published port; the
// old one is dead by then, so the answer is the new one's.
func (c *ctr) restart(ctx context.Context) error {
	if err := c.kill(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, containerStartTimeout)
	defer cancel()
	if _, err := c.l.dc.ContainerStart(ctx, c.c.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("redisenv: starting the %s container again: %s", c.name, oneLine(err))
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := ping(c.address)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisenv: the restarted %s container does not answer PING on %s: %v", c.name, c.address, err)
		case <-time.After(delay):
		}
	}
}

// remove removes the container, running or not.
func (c *ctr) remove(ctx context.Context) error {
	return c.c.Terminate(ctx, testcontainers.StopTimeout(0))
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
