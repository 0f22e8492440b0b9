package redisenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// Sentinel is the backend of redis-server processes watched by Redis Sentinel, as users' locks
// fail over: per lock node a primary, a replica (replicating through the node's holdable proxy,
// as on the server backend) and three Sentinels (redis-server --sentinel, each with a generated
// config in a temp dir of its own) monitoring that primary with quorum 2, plus the inventory
// node, which no Sentinel watches and which never fails over. Buyers' clients (Node.NewClient)
// are go-redis failover clients: they ask the Sentinels where the primary is and follow their
// switch. Failover kills the primary and waits for the Sentinels' own election and promotion;
// the lab sends no REPLICAOF.
//
// The Sentinels run with down-after-milliseconds 3000, failover-timeout 3000 and
// parallel-syncs 1 (sentinelConf), settings a deployment on a low-latency network could use. A
// Sentinel that loses its link to an instance tries again at most once a second, so a restart
// of the primary looks to it like an outage of up to ~1.2 s: at down-after-milliseconds 1000, 9
// of 60 Sentinel-restarts (14 of 60 with two CPU burners) had a Sentinel mark the primary down,
// and two at once would fail it over. At 3000 none does, and a failover takes 4–5 s
// (sentinelOutage).
//
// Hazard: Sentinel takes a replica that replicates from another address than the primary's (the
// proxy's) for a misconfigured one, and after failover-timeout points it at the primary itself
// (+fix-slave-config), past the proxy; HoldReplication would then hold nothing. So every
// redis-server of this backend has an ACL user for the Sentinels (sentinelUser) that may run
// REPLICAOF NO ONE (a promotion) and no other REPLICAOF: Sentinel's fixes fail, every second
// (their +fix-slave-config lines in the Sentinels' logs), and change nothing. As with Server, the
// processes outlive a program that exits without Close or CloseAll (see Server).
type Sentinel struct{ *fleet }

// sentinelUser is the ACL user the Sentinels authenticate as on every redis-server of the
// sentinel backend; the lab's own clients and the buyers' are the default user.
const sentinelUser = "lockstep-sentinel"

// The Sentinels' settings (see Sentinel).
const (
	sentinelQuorum          = 2
	sentinelDownAfter       = 3000 * time.Millisecond
	sentinelFailoverTimeout = 3000 * time.Millisecond
	sentinelParallelSyncs   = 1
)

// sentinelOutage is how long a failover may take, with room: measured (kill to every Sentinel
// naming the promoted replica, which takes a write) at 4.2–5.2 s idle and 4.2–5.3 s with two CPU
// burners, 20 runs each: down-after-milliseconds (3 s) until the Sentinels agree the primary is
// down, ~0.2 s of election, up to a second (Sentinel's INFO period) until the leader sees the
// replica answer as a primary. A split vote, not seen in those runs, would add 2 ×
// failover-timeout (6 s) and up to a second; the lease a scenario gives (3 × Outage) covers it.
const sentinelOutage = 8 * time.Second

// sentinelWait bounds how long Failover waits for the Sentinels' election and promotion, and
// Restart for them to see the restarted primary.
const sentinelWait = 30 * time.Second

// NewSentinel starts one lock node (a primary, its replica and three Sentinels) and the inventory
// node.
func NewSentinel() (*Sentinel, error) { return NewSentinelNodes(1) }

// NewSentinelNodes starts n lock nodes, each a primary with its replica and three Sentinels of
// its own, independent of the others, and the inventory node: 5n+1 redis-server processes. The
// servers start at once; each node's Sentinels start once its replica is linked. It silences
// go-redis's "sentinel:" log lines (quietSentinelLog).
func NewSentinelNodes(n int) (*Sentinel, error) {
	if err := needRedisServer("sentinel"); err != nil {
		return nil, err
	}
	quietSentinelLog()
	w := &sentinelWatch{pass: randomHex(16)}
	f, err := openFleet("sentinel", newPrefix(), procLauncher{extra: sentinelACL(w.pass)}, n, w)
	if err != nil {
		return nil, err
	}
	return &Sentinel{f}, nil
}

// Pids returns the process ids of every redis-server (Sentinels included) the backend runs now.
func (s *Sentinel) Pids() []int { return s.pids() }

// Dirs returns the temp dirs of the backend's processes (Sentinels included), killed ones too.
func (s *Sentinel) Dirs() []string { return s.dirs() }

// quietOnce silences go-redis's failover clients once per program (quietSentinelLog).
var quietOnce sync.Once

// quietSentinelLog keeps go-redis's failover clients from writing a line to stderr, the lab's
// terminal, whenever one asks a Sentinel for the primary ("sentinel: selected addr=…") or finds
// a Sentinel down. Hazard: go-redis's logger is process-wide: it drops every line containing
// "sentinel: " for every client of the program, and writes the rest as go-redis's default does.
func quietSentinelLog() {
	quietOnce.Do(func() { redis.SetLogger(logging.NewBlacklistLogger([]string{"sentinel: "})) })
}

// sentinelACL is the ACL user every redis-server of the backend starts with: the Sentinels may run
// everything but a REPLICAOF (SLAVEOF) other than REPLICAOF NO ONE (see Sentinel).
func sentinelACL(pass string) []string {
	return []string{"--user", sentinelUser, "on", ">" + pass, "allkeys", "allchannels", "+@all",
		"-replicaof", "-slaveof", "+replicaof|no", "+slaveof|no"}
}

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sentinelWatch is the sentinel backend's watchman: it starts three Sentinels per lock node.
type sentinelWatch struct {
	pass string // the Sentinels' password on every server (sentinelUser)
}

// watch starts nd's three Sentinels, monitoring nd's primary under nd's name with quorum 2, each
// told of the others (known-sentinel), and waits until each of them sees the primary up, its
// replica linked and the two others: from then on they can elect a leader. A port another program
// takes first makes it start the three again on fresh ports.
//
// That takes about a second: a Sentinel tries a peer that was not yet listening again only a
// second later (one started before the others; three started one after the other, each told of
// those before it, took two seconds, the first one learning of the others from their first
// hello).
func (w *sentinelWatch) watch(ctx, life context.Context, nd *replNode) ([]redisServer, error) {
	var procs []*proc
	var err error
	for range 5 {
		if procs, err = w.startThree(ctx, nd); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	s := &sentinels{master: nd.name, procs: procs, life: life}
	for _, p := range procs {
		s.addrs = append(s.addrs, p.addr())
		// RESP2: SENTINEL MASTER and its kin answer flat lists of names and values.
		s.clients = append(s.clients, redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, PoolSize: 2,
			MaxRetries: -1, DisableIdentity: true}))
	}
	if err := s.awaitWatching(ctx, nd.primary.addr(), nd.replica.addr()); err != nil {
		s.close()
		for _, p := range procs {
			p.remove(context.Background())
		}
		return nil, err
	}
	nd.sent = s
	servers := make([]redisServer, len(procs))
	for i, p := range procs {
		servers[i] = p
	}
	return servers, nil
}

// startThree starts nd's three Sentinels at once, on ports chosen first so that each one's config
// names the others. On an error it leaves none running.
func (w *sentinelWatch) startThree(ctx context.Context, nd *replNode) ([]*proc, error) {
	host, port, _ := net.SplitHostPort(nd.primary.addr())
	ports := make([]int, 3)
	ids := make([]string, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("redisenv: finding a free port for %s's Sentinels: %w", nd.name, err)
		}
		ports[i], ids[i] = p, randomHex(20)
	}
	procs := make([]*proc, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			conf := func(p *proc) string {
				var b strings.Builder
				fmt.Fprintf(&b, "port %d\nbind 127.0.0.1\ndaemonize no\nlogfile \"\"\nloglevel warning\ndir %s\nsentinel myid %s\n", p.port, p.dir, ids[i])
				b.WriteString(sentinelConf(nd.name, host, port, w.pass))
				for j := range ports {
					if j != i {
						fmt.Fprintf(&b, "sentinel known-sentinel %s 127.0.0.1 %d %s\n", nd.name, ports[j], ids[j])
					}
				}
				return b.String()
			}
			procs[i], errs[i] = runProc(ctx, &proc{name: fmt.Sprintf("%s sentinel %d", nd.name, i+1), port: ports[i], conf: conf})
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		for _, p := range procs {
			if p != nil {
				p.remove(context.Background())
			}
		}
		return nil, err
	}
	return procs, nil
}

// sentinelConf is the monitoring part of a Sentinel's config: the primary at host:port under
// name, the settings of Sentinel's doc, and the user the Sentinel authenticates as.
func sentinelConf(name, host, port, pass string) string {
	return fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s %[4]d\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\n"+
		"sentinel failover-timeout %[1]s %[6]d\n"+
		"sentinel parallel-syncs %[1]s %[7]d\n"+
		"sentinel auth-user %[1]s %[8]s\n"+
		"sentinel auth-pass %[1]s %[9]s\n",
		name, host, port, sentinelQuorum, sentinelDownAfter.Milliseconds(), sentinelFailoverTimeout.Milliseconds(),
		sentinelParallelSyncs, sentinelUser, pass)
}

// sentinels are one lock node's three Sentinels, and the lab's clients of them.
type sentinels struct {
	master  string          // the name they monitor the node's primary under: the node's
	life    context.Context // ends when the fleet's Close begins: a wait on the Sentinels ends with it
	procs   []*proc
	addrs   []string
	clients []*redis.Client
}

// newClient is a go-redis failover client of the node: it asks the Sentinels where the primary
// is on each dial, and drops its connections to an old primary when a Sentinel announces a
// switch.
func (s *sentinels) newClient() *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.master, SentinelAddrs: slices.Clone(s.addrs)})
}

// close closes the lab's clients of the Sentinels; the processes are the fleet's to remove.
func (s *sentinels) close() {
	for _, c := range s.clients {
		c.Close()
	}
}

// view is what one Sentinel says of the node's primary: its address, its flags, how many
// replicas and other Sentinels it knows.
type view struct {
	addr, flags    string
	replicas, peer int
}

func (v view) String() string {
	return fmt.Sprintf("%s (%s)", v.addr, v.flags)
}

// look asks Sentinel i for its view of the primary (SENTINEL MASTER).
func (s *sentinels) look(ctx context.Context, i int) (view, error) {
	m, err := s.clients[i].Do(ctx, "SENTINEL", "MASTER", s.master).Slice()
	if err != nil {
		return view{}, err
	}
	f := fields(m)
	replicas, _ := strconv.Atoi(f["num-slaves"])
	peers, _ := strconv.Atoi(f["num-other-sentinels"])
	return view{addr: net.JoinHostPort(f["ip"], f["port"]), flags: f["flags"], replicas: replicas, peer: peers}, nil
}

// views asks every Sentinel, for a message.
func (s *sentinels) views(ctx context.Context) string {
	var out []string
	for i := range s.clients {
		v, err := s.look(ctx, i)
		if err != nil {
			out = append(out, "?: "+oneLine(err))
			continue
		}
		out = append(out, v.String())
	}
	return strings.Join(out, ", ")
}

// lastWords is a Sentinel's last log line, for a message.
func (s *sentinels) lastWords() string {
	var out []string
	for _, p := range s.procs {
		out = append(out, p.lastLine())
	}
	return strings.Join(out, " | ")
}

// awaitWatching waits until every Sentinel sees the primary at primary up, its replica at replica
// linked to it, and the two other Sentinels connected: from then on a failover can be elected.
func (s *sentinels) awaitWatching(ctx context.Context, primary, replica string) error {
	ready := func(i int) bool {
		v, err := s.look(ctx, i)
		if err != nil || v.addr != primary || v.flags != "master" || v.replicas != 1 || v.peer != 2 {
			return false
		}
		reps, err := s.clients[i].Do(ctx, "SENTINEL", "REPLICAS", s.master).Slice()
		if err != nil || len(reps) != 1 {
			return false
		}
		r := fields(reps[0])
		if net.JoinHostPort(r["ip"], r["port"]) != replica || r["flags"] != "slave" || r["master-link-status"] != "ok" {
			return false
		}
		peers, err := s.clients[i].Do(ctx, "SENTINEL", "SENTINELS", s.master).Slice()
		if err != nil || len(peers) != 2 {
			return false
		}
		for _, p := range peers {
			if fields(p)["flags"] != "sentinel" {
				return false
			}
		}
		return true
	}
	for i := range s.clients {
		for !ready(i) {
			select {
			case <-ctx.Done():
				return fmt.Errorf("redisenv: %s's Sentinels did not start watching it (they see %s): %w; %s", s.master, s.views(context.Background()), ctx.Err(), s.lastWords())
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}

// fields reads one entry of SENTINEL REPLICAS or SENTINELS (in RESP2, a flat list of names and
// values).
func fields(entry any) map[string]string {
	f := map[string]string{}
	if e, ok := entry.([]any); ok {
		for j := 0; j+1 < len(e); j += 2 {
			f[fmt.Sprint(e[j])] = fmt.Sprint(e[j+1])
		}
	}
	return f
}

// awaitPromotion waits, once the primary is dead, until every Sentinel names replica as the
// node's primary (they have elected a leader, which promoted it and saw it answer as a primary),
// or sentinelWait passes.
func (s *sentinels) awaitPromotion(ctx context.Context, replica redisServer) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	want := replica.addr()
	named := func() bool {
		for _, c := range s.clients {
			a, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.master).StringSlice()
			if err != nil || len(a) != 2 || net.JoinHostPort(a[0], a[1]) != want {
				return false
			}
		}
		return true
	}
	for !named() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisenv: %s's Sentinels did not promote its replica %s (%v): they see %s; their last words: %s",
				s.master, want, ctx.Err(), s.views(context.Background()), s.lastWords())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// bound is ctx, ending after sentinelWait or once the fleet's Close begins (a Ctrl-C does not
// wait out an election).
func (s *sentinels) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, sentinelWait)
	stop := context.AfterFunc(s.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// errSentinelFailedOver is what Restart answers when the Sentinels failed the node over while
// its primary restarted.
var errSentinelFailedOver = errors.New("redisenv: the Sentinels failed the node over while its primary restarted")

// awaitSeen waits, once the primary at primary has restarted, until every Sentinel is linked to
// it again and takes it for up (its flags are "master" alone: not disconnected, not s_down), so
// none can still take the restart for the primary's death, or sentinelWait passes. A Sentinel
// that names another primary, or has begun a failover, is errSentinelFailedOver. Hazard: a
// Sentinel reconnects at most once per down-after-milliseconds (1 s), so this takes up to that.
func (s *sentinels) awaitSeen(ctx context.Context, primary string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for i := range s.clients {
		for {
			v, err := s.look(ctx, i)
			if err == nil && (v.addr != primary || strings.Contains(v.flags, "failover_in_progress") || strings.Contains(v.flags, "o_down")) {
				return fmt.Errorf("%w: Sentinel %d sees %s; their last words: %s", errSentinelFailedOver, i+1, v, s.lastWords())
			}
			if err == nil && v.flags == "master" {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("redisenv: %s's Sentinels did not see its restarted primary (%v): they see %s", s.master, ctx.Err(), s.views(context.Background()))
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return nil
}
