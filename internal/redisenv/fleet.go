package redisenv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// launcher starts the redis-servers of one backend: processes (server) or containers
// (container).
type launcher interface {
	// start starts one redis-server with redisArgs, named role in messages, and returns once it
	// answers. On an error it leaves nothing behind.
	start(ctx context.Context, role string) (redisServer, error)
	// proxyHost is this host's address as replica reaches it: the replication proxy of replica's
	// node listens there.
	proxyHost(ctx context.Context, replica redisServer) (string, error)
	// close releases what the launcher holds (a Docker client), once every server is removed.
	close()
}

// watchman watches a fleet's lock nodes besides the lab: the sentinel backend's Sentinels.
type watchman interface {
	// watch starts what watches nd, once its replica is linked, and returns once nd is watched,
	// with every process it started, for the fleet to remove. On an error it leaves nothing
	// running. It may set nd's fields: nd is not shared yet. life ends when the fleet's Close
	// begins: a wait of nd's on its watchers (a failover) gives up then.
	watch(ctx, life context.Context, nd *replNode) ([]redisServer, error)
}

// fleet is the topology the server, sentinel and container backends share, on the redis-servers a
// launcher starts: n lock nodes, each a primary with its replica (a replNode), and an inventory
// node that never fails over; on the sentinel backend, Sentinels (a watchman) watch each node.
// It starts them all at once and links the nodes in parallel, so a quorum costs about what one
// node does.
//
// Hazard: the servers outlive a program that exits without Close; a program that handles SIGINT
// must call CloseAll, after which no fleet starts (the program is taken to be exiting).
type fleet struct {
	backend string
	prefix  string
	l       launcher
	w       watchman // nil: the lab alone fails a node over

	ctx    context.Context // cancelled when Close begins: a start in progress stops waiting
	cancel context.CancelFunc

	mu        sync.Mutex // guards the fields below while the fleet starts; they are fixed after
	inventory redisServer
	nodes     []*replNode
	all       []redisServer // every server started, killed ones included, until Close removes them
	closed    bool

	starting  sync.WaitGroup // the start in progress; Close waits for it
	closeOnce sync.Once
	closeErr  error
}

// errExiting is openFleet's answer once CloseAll has run.
var errExiting = errors.New("redisenv: CloseAll has run (the program is exiting): no backend starts")

// openFleet starts n lock nodes and an inventory node through l, for a run whose keys live under
// prefix, and has w (if not nil) watch each node. It registers the fleet for
// CloseAll before the first server exists: a CloseAll meanwhile waits for the start and removes
// whatever it made.
func openFleet(backend, prefix string, l launcher, n int, w watchman) (*fleet, error) {
	gen := closeAllGen()
	if gen > 0 && !reopenAfterCloseAll.Load() {
		// A server started now might outlive the program (a container the daemon finishes
		// creating after its client exited, a temp dir).
		l.close()
		return nil, errExiting
	}
	f := &fleet{backend: backend, prefix: prefix, l: l, w: w}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.starting.Add(1)
	if !registerSince(f, gen) {
		f.starting.Done()
		f.cancel()
		l.close()
		return nil, errExiting
	}
	err := f.start(max(n, 1))
	f.starting.Done()
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// start starts every server in parallel, then links each node's replica to its primary and has
// the watchman watch it, the nodes in parallel.
func (f *fleet) start(n int) error {
	roles := []string{"inventory"}
	for i := range n {
		roles = append(roles, nodeName(i, n)+" primary", nodeName(i, n)+" replica")
	}
	servers := make([]redisServer, len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		wg.Go(func() {
			s, err := f.l.start(f.ctx, role)
			f.mu.Lock()
			defer f.mu.Unlock()
			if s != nil {
				f.all = append(f.all, s)
			}
			servers[i], errs[i] = s, err
		})
	}
	wg.Wait()
	if err := f.stopped(); err != nil {
		return err
	}
	if err := firstError(errs); err != nil { // one is enough, on one line
		return err
	}
	f.mu.Lock()
	f.inventory = servers[0]
	f.nodes = make([]*replNode, n)
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(f.ctx, startTimeout)
	defer cancel()
	clear(errs)
	for i := range n {
		wg.Go(func() {
			primary, replica := servers[1+2*i], servers[2+2*i]
			host, err := f.l.proxyHost(ctx, replica)
			var nd *replNode
			if err == nil {
				// A watched replica is not told that its link is held (see replProxy.stall).
				nd, err = newReplNode(ctx, nodeName(i, n), f.prefix, primary, replica, host, f.w != nil)
			}
			var watchers []redisServer
			if err == nil && f.w != nil {
				watchers, err = f.w.watch(ctx, f.ctx, nd)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.all = append(f.all, watchers...)
			f.nodes[i], errs[i] = nd, err
		})
	}
	wg.Wait()
	if err := f.stopped(); err != nil {
		return err
	}
	return firstError(errs)
}

// stopped is an error once Close has begun.
func (f *fleet) stopped() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("redisenv: the %s backend was closed (CloseAll) while starting", f.backend)
	}
	return nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Backend names the backend ("server", "sentinel" or "container").
func (f *fleet) Backend() string { return f.backend }

// Prefix returns the run's key prefix.
func (f *fleet) Prefix() string { return f.prefix }

// Nodes are the lock nodes, each a primary with its replica.
func (f *fleet) Nodes() []Node {
	ns := make([]Node, len(f.nodes))
	for i, n := range f.nodes {
		ns[i] = n
	}
	return ns
}

// InventoryOptions dials the inventory node.
func (f *fleet) InventoryOptions() *redis.Options {
	return &redis.Options{Addr: f.inventory.addr()}
}

// servers returns every server started and not yet removed.
func (f *fleet) servers() []redisServer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]redisServer(nil), f.all...)
}

// Close removes every server (killed ones included) and closes the nodes' clients and proxies.
// It may be called more than once, and from CloseAll concurrently with the run's own Close or
// with the start: it waits for the start (whose container creations it does not cancel: the
// daemon could finish one after the client gave up), and for a Failover or Restart in progress.
func (f *fleet) Close() error {
	f.closeOnce.Do(func() {
		// Unregistered only once everything is removed: a CloseAll meanwhile calls Close, which
		// waits for this one, so the program cannot exit while a server is being removed.
		defer unregister(f)
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		f.cancel()
		f.starting.Wait()
		f.mu.Lock()
		nodes, all := f.nodes, f.all
		f.all = nil
		f.mu.Unlock()
		for _, n := range nodes {
			if n != nil {
				n.close()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, len(all))
		for i, s := range all {
			wg.Go(func() {
				if err := s.remove(ctx); err != nil {
					errs[i] = fmt.Errorf("redisenv: removing the %s: %w", s.role(), err)
				}
			})
		}
		wg.Wait()
		f.l.close()
		f.closeErr = errors.Join(errs...)
	})
	return f.closeErr
}

// suspectTries and suspectWait are how often, and how far apart, Strangers asks a server again
// about a claimed connection it still lists after the lab closed it.
const (
	suspectTries = 50
	suspectWait  = 20 * time.Millisecond
)

// clientList is CLIENT LIST, each client's fields by name; nothing when the server does not answer.
func clientList(ctx context.Context, c *redis.Client) []map[string]string {
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		return nil
	}
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		fields := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			fields[k] = v
		}
		out = append(out, fields)
	}
	return out
}

// Strangers lists, for the server and sentinel backends, the clients of the nodes and the
// inventory whose connections nobody claimed and that have sent a command (CLIENT LIST: each
// client's address and last command, matched against the claimed local addresses; one the lab
// has closed but the server still lists is asked about again, as the server has read its end by
// the next answer). The Sentinels' own connections are known by their user (sentinelUser). A
// container's clients reach it through Docker's NAT, under addresses the lab cannot match: there
// it says nothing.
func (f *fleet) Strangers(ctx context.Context) []string {
	if f.backend != "server" && f.backend != "sentinel" {
		return nil
	}
	var out []string
	look := func(name, addr string) {
		c := redis.NewClient(claiming(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1}))
		defer c.Close()
		var strangers []map[string]string
		suspects := map[string]map[string]string{} // by id: claimed connections closed now
		for _, fields := range clientList(ctx, c) {
			if strings.ContainsAny(fields["flags"], "SM") || (f.w != nil && fields["user"] == sentinelUser) {
				continue
			}
			switch fields["cmd"] {
			case "NULL", "client|list", "hello", "client|setinfo", "client|setname", "ping", "info", "auth", "select":
				continue
			}
			switch lab, closed := claimedAddr(fields["addr"], fields["laddr"]); {
			case lab:
			case closed:
				suspects[fields["id"]] = fields
			default:
				strangers = append(strangers, fields)
			}
		}
		// The lab closed these before the server read their end, or freed them (a client closed
		// mid-command is freed asynchronously): ask again until they are gone, for at most a
		// second. One still there is a stranger's connection on a reused port.
		for try := 0; len(suspects) > 0; try++ {
			if try == suspectTries {
				for _, fields := range suspects {
					strangers = append(strangers, fields)
				}
				break
			}
			if try > 0 {
				time.Sleep(suspectWait)
			}
			still := map[string]map[string]string{}
			for _, fields := range clientList(ctx, c) {
				if s, ok := suspects[fields["id"]]; ok && s["addr"] == fields["addr"] {
					still[fields["id"]] = fields
				}
			}
			suspects = still
		}
		for _, fields := range strangers {
			out = append(out, fmt.Sprintf("a client at %s the lab did not hand out sent commands to the %s (the last: %s)", fields["addr"], name, fields["cmd"]))
		}
	}
	for _, n := range f.nodes {
		look(n.name, n.primaryAddr())
	}
	look("inventory", f.inventory.addr())
	return out
}
