package redisenv

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedisServer is Open's answer for the server backend when redis-server is not on PATH.
var ErrNoRedisServer = errors.New("redisenv: the server backend needs redis-server on PATH (apt-get install redis-server)")

// Server is the backend of real redis-server processes on loopback ports: a lock primary, a lock
// replica fed by real REPLICAOF replication, and an inventory node. The replica reaches the primary
// through a TCP proxy in this process, so HoldReplication can cut the replication link at an exact
// point: everything written before it reached the replica, nothing written after it does.
//
// Hazard: the processes outlive a Go program that exits without Close. On Linux they get SIGKILL
// when the process that started them dies, but their temp dirs stay behind; a program that handles
// SIGINT must call CloseAll before it exits.
type Server struct {
	prefix    string
	inventory *node
	admin     *redis.Client // uncounted, follows the primary
	proxy     *replProxy

	mu       sync.Mutex // guards the fields below; Failover holds it, so dials wait for the new primary
	primary  *node
	replica  *node         // nil once promoted
	repl     *redis.Client // to the replica, while it is one
	promoted bool
	closed   bool

	closeOnce sync.Once
	closeErr  error
}

// node is one redis-server process with its own temp dir.
type node struct {
	role   string
	addr   string
	dir    string
	cmd    *exec.Cmd
	out    *tail
	exited chan struct{} // closed once the process has exited and been reaped
}

// startTimeout bounds how long a redis-server may take to answer PING, and a replica to sync.
const startTimeout = 10 * time.Second

// NewServerNodes starts n lock nodes on redis-server processes. Hazard: only one is built yet;
// the quorum topology is being restructured into one replicated-node type shared with the
// container backend.
func NewServerNodes(n int) (*Server, error) {
	if n > 1 {
		return nil, fmt.Errorf("%w: the server backend starts one lock node for now", ErrSingleNode)
	}
	return NewServer()
}

// Restart restarts the lock primary without persistence.
func (n serverNode) Restart(ctx context.Context) error {
	return errors.New("redisenv: the server backend cannot restart a node yet")
}

// NewServer starts the lock primary, its replica (replicating through a holdable proxy) and the
// inventory node, and waits until the replica's link to the primary is up.
func NewServer() (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNoRedisServer
	}
	s := &Server{prefix: newPrefix()}
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}
	var wg sync.WaitGroup
	var errs [3]error
	for i, n := range []**node{&s.primary, &s.replica, &s.inventory} {
		wg.Go(func() { *n, errs[i] = startNode([]string{"lock-primary", "lock-replica", "inventory"}[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return fail(err)
	}
	var err error
	if s.proxy, err = newReplProxy(s.primary.addr); err != nil {
		return fail(err)
	}
	s.admin = redis.NewClient(s.LockOptions())
	s.repl = redis.NewClient(&redis.Options{Addr: s.replica.addr, PoolSize: 2, MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	host, port, _ := net.SplitHostPort(s.proxy.addr())
	if err := s.repl.SlaveOf(ctx, host, port).Err(); err != nil {
		return fail(fmt.Errorf("redisenv: REPLICAOF on the lock replica: %w", err))
	}
	if err := s.waitLinkUp(ctx); err != nil {
		return fail(err)
	}
	if err := s.waitStream(ctx); err != nil {
		return fail(err)
	}
	register(s)
	return s, nil
}

// startNode starts one redis-server on a free loopback port, retrying on a fresh port if another
// program took the one it was given.
func startNode(role string) (*node, error) {
	var last error
	for range 5 {
		n, err := tryStartNode(role)
		if err == nil {
			return n, nil
		}
		last = err
	}
	return nil, last
}

func tryStartNode(role string) (*node, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("redisenv: finding a free port for the %s: %w", role, err)
	}
	dir, err := os.MkdirTemp("", "lockstep-redis-"+role+"-")
	if err != nil {
		return nil, fmt.Errorf("redisenv: %w", err)
	}
	n := &node{role: role, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, out: &tail{}, exited: make(chan struct{})}
	n.cmd = exec.Command("redis-server",
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		// Disk-based full sync: a diskless one (the 7.0 default) streams writes only after the
		// replica's first REPLCONF ACK, which races the primary reaping its RDB child; losing
		// that race (1 start in 5 here) holds every write back for the replica's 1 s cron.
		"--repl-diskless-sync", "no",
		"--repl-diskless-sync-delay", "0",
		"--notify-keyspace-events", KeyspaceEvents, // the referee's watcher reads them
		"--logfile", "",
	)
	n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
	n.cmd.SysProcAttr = sysProcAttr()
	if err := n.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redisenv: starting redis-server for the %s: %w", role, err)
	}
	go func() {
		n.cmd.Wait()
		close(n.exited)
	}()
	if err := n.waitReady(); err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

// waitReady polls the node with PING until it answers, it exits, or startTimeout passes. A PONG
// is not enough: another program may have taken the port between freePort and the bind, and the
// node's redis-server then dies while the other answers; the answer must come from our process.
func (n *node) waitReady() error {
	deadline := time.Now().Add(startTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		if ping(n.addr) == nil {
			return n.isOurs()
		}
		select {
		case <-n.exited:
			return fmt.Errorf("redisenv: redis-server for the %s exited at start: %s", n.role, n.out.lastLine())
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisenv: redis-server for the %s did not answer PING within %v", n.role, startTimeout)
		}
	}
}

// ping sends one inline PING on a fresh connection.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// isOurs checks with INFO that the server answering at the node's address is the node's own
// process.
func (n *node) isOurs() error {
	c := redis.NewClient(&redis.Options{Addr: n.addr, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redisenv: the server on %s for the %s does not answer INFO: %w", n.addr, n.role, err)
	}
	if pid := infoField(info, "process_id"); pid != strconv.Itoa(n.cmd.Process.Pid) {
		return fmt.Errorf("redisenv: another server (pid %s) answers on %s, the port given to the %s", pid, n.addr, n.role)
	}
	return nil
}

// kill sends SIGKILL and waits until the process is reaped.
func (n *node) kill() {
	if n == nil {
		return
	}
	n.cmd.Process.Kill()
	<-n.exited
}

// stop kills the process and removes its dir.
func (n *node) stop() error {
	if n == nil {
		return nil
	}
	n.kill()
	return os.RemoveAll(n.dir)
}

// Pid is the process id of the node's redis-server.
func (n *node) pid() int { return n.cmd.Process.Pid }

// freePort asks the kernel for a free loopback port. Hazard: another program may take it before
// redis-server binds it; startNode retries on a fresh port when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitLinkUp waits until the replica reports master_link_status:up.
func (s *Server) waitLinkUp(ctx context.Context) error {
	for {
		info, err := s.repl.Info(ctx, "replication").Result()
		if err == nil && infoField(info, "master_link_status") == "up" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redisenv: the lock replica did not sync with the primary: %s", s.replica.out.lastLine())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// waitStream writes a probe key on the primary and waits until the replica has it: the link
// being up does not yet mean the primary streams its writes.
func (s *Server) waitStream(ctx context.Context) error {
	pc := redis.NewClient(&redis.Options{Addr: s.primary.addr, PoolSize: 1, MaxRetries: -1})
	defer pc.Close()
	probe := s.prefix + "sync:probe"
	if err := pc.Set(ctx, probe, 1, 0).Err(); err != nil {
		return fmt.Errorf("redisenv: writing to the lock primary: %w", err)
	}
	defer pc.Del(context.WithoutCancel(ctx), probe)
	for s.repl.Exists(ctx, probe).Val() == 0 {
		select {
		case <-ctx.Done():
			return errors.New("redisenv: the lock replica is linked but receives no writes from the primary")
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// infoField returns the value of field in an INFO answer, or "".
func infoField(info, field string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// Backend returns "server".
func (s *Server) Backend() string { return "server" }

// Prefix returns the run's key prefix.
func (s *Server) Prefix() string { return s.prefix }

func (s *Server) primaryAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.primary.addr
}

// LockOptions dials whichever process is primary at dial time; a dial during Failover waits for
// the promoted replica.
func (s *Server) LockOptions() *redis.Options {
	return followPrimary(s.primaryAddr)
}

// Nodes is the one lock node: the primary and its replica.
func (s *Server) Nodes() []Node { return []Node{serverNode{s}} }

// serverNode is the Server's lock primary and replica as a Node.
type serverNode struct{ s *Server }

func (n serverNode) Name() string                       { return "lock" }
func (n serverNode) Options() *redis.Options            { return n.s.LockOptions() }
func (n serverNode) Hook() redis.Hook                   { return nil }
func (n serverNode) Admin() *redis.Client               { return n.s.admin }
func (n serverNode) CanFailover() bool                  { return true }
func (n serverNode) HoldReplication()                   { n.s.HoldReplication() }
func (n serverNode) Failover(ctx context.Context) error { return n.s.Failover(ctx) }
func (n serverNode) Watch(key string) (Watcher, error) {
	return newNotifyWatcher(key, 0, n.s.LockOptions(), n.s.admin)
}

// InventoryOptions dials the inventory node.
func (s *Server) InventoryOptions() *redis.Options {
	return &redis.Options{Addr: s.inventory.addr}
}

// Admin is an uncounted client of the current lock primary.
func (s *Server) Admin() *redis.Client { return s.admin }

// HoldReplication waits (up to a second) until the replica has applied every write the primary
// has answered, then cuts the replication link at the proxy: no byte the primary sends after that
// reaches the replica, and the replica cannot reconnect until Failover promotes it.
func (s *Server) HoldReplication() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replica == nil || s.closed || s.proxy.isHeld() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	awaitCatchUp(ctx, s.primary.addr, s.repl) // the caller holds s.mu: dial the primary directly
	s.proxy.hold()
}

// Failover SIGKILLs the lock primary, promotes the replica with REPLICAOF NO ONE and waits until
// it accepts a write. Clients' broken connections redial the promoted replica.
func (s *Server) Failover(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("redisenv: the server backend is closed")
	case s.promoted:
		return errors.New("redisenv: the replica was already promoted; there is nothing left to fail over to")
	}
	s.proxy.hold()
	s.primary.kill()
	s.proxy.close()
	if err := s.repl.SlaveOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("redisenv: REPLICAOF NO ONE on the lock replica: %w", err)
	}
	probe := s.prefix + "failover:probe"
	for {
		err := s.repl.Set(ctx, probe, 1, time.Second).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("redisenv: the promoted replica does not accept writes: %w", err)
		}
		time.Sleep(time.Millisecond)
	}
	s.repl.Del(ctx, probe)
	old := s.primary
	s.primary, s.replica, s.promoted = s.replica, nil, true
	os.RemoveAll(old.dir)
	return nil
}

// Pids returns the process ids of every redis-server the Server started and has not yet killed.
func (s *Server) Pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, n := range []*node{s.primary, s.replica, s.inventory} {
		if n == nil {
			continue
		}
		select {
		case <-n.exited:
		default:
			pids = append(pids, n.pid())
		}
	}
	return pids
}

// Dirs returns the temp dirs of the Server's processes.
func (s *Server) Dirs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var dirs []string
	for _, n := range []*node{s.primary, s.replica, s.inventory} {
		if n != nil {
			dirs = append(dirs, n.dir)
		}
	}
	return dirs
}

// Close kills every process, removes every temp dir and closes the clients. It may be called
// more than once, and from CloseAll concurrently with the run's own Close.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		// Unregister last: a CloseAll racing this Close then still finds s, and its Close call
		// waits on closeOnce until every process is stopped and every dir removed.
		defer unregister(s)
		if s.admin != nil {
			s.admin.Close()
		}
		if s.repl != nil {
			s.repl.Close()
		}
		if s.proxy != nil {
			s.proxy.close()
		}
		s.mu.Lock()
		s.closed = true
		nodes := []*node{s.primary, s.replica, s.inventory}
		s.mu.Unlock()
		var errs []error
		for _, n := range nodes {
			if err := n.stop(); err != nil {
				errs = append(errs, err)
			}
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// replProxy forwards the replica's replication connection to the primary. hold cuts it: bytes
// from the primary are written to the replica only while not held, under the same lock hold
// takes, so nothing passes once hold has returned.
type replProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu     sync.Mutex
	held   bool
	closed bool
	conns  map[net.Conn]struct{}
}

func newReplProxy(target string) (*replProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("redisenv: replication proxy: %w", err)
	}
	p := &replProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
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
		}()
	}
}

// toReplica copies the primary's stream to the replica while the link is not held.
func (p *replProxy) toReplica(up, down net.Conn) {
	defer p.wg.Done()
	defer up.Close()
	defer down.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if p.held || p.closed {
				p.mu.Unlock()
				return
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

func (p *replProxy) isHeld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// hold cuts every link and refuses new ones.
func (p *replProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// close stops the proxy and waits for its goroutines.
func (p *replProxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.hold()
	p.ln.Close()
	p.wg.Wait()
}

// tail keeps the last few KiB a process wrote, for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(b), nil
}

// lastLine is the last non-empty line written, or "no output".
func (t *tail) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "no output"
}

// open holds every Env of this package that owns something outside the process (server processes,
// keys on a shared server), for CloseAll.
var open struct {
	sync.Mutex
	envs map[io.Closer]struct{}
	gen  uint64 // how many times CloseAll has started
}

// closeAllGen is how many times CloseAll has started; an Env that takes it before it starts
// anything can tell, with registerSince, whether a CloseAll ran meanwhile.
func closeAllGen() uint64 {
	open.Lock()
	defer open.Unlock()
	return open.gen
}

// registerSince registers c unless CloseAll has started since closeAllGen returned gen.
func registerSince(c io.Closer, gen uint64) bool {
	open.Lock()
	defer open.Unlock()
	if open.gen != gen {
		return false
	}
	if open.envs == nil {
		open.envs = map[io.Closer]struct{}{}
	}
	open.envs[c] = struct{}{}
	return true
}

func register(c io.Closer) {
	open.Lock()
	defer open.Unlock()
	if open.envs == nil {
		open.envs = map[io.Closer]struct{}{}
	}
	open.envs[c] = struct{}{}
}

func unregister(c io.Closer) {
	open.Lock()
	defer open.Unlock()
	delete(open.envs, c)
}

// CloseAll closes every server, container and url Env still open: a program calls it from its
// SIGINT/SIGTERM handler (and may defer it in main) so no redis-server, container, temp dir or
// prefixed key outlives it. A container Env still starting is waited for and removed; one whose
// Open began before CloseAll and had started nothing yet fails instead, and so does every later
// container Open: the program is taken to be exiting, and the Docker daemon would finish creating
// a container whose client exited mid-request.
// Hazard: a run still using one of those Envs sees its commands fail.
func CloseAll() error {
	open.Lock()
	open.gen++
	envs := make([]io.Closer, 0, len(open.envs))
	for c := range open.envs {
		envs = append(envs, c)
	}
	open.Unlock()
	var errs []error
	for _, c := range envs {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
