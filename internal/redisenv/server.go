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
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedisServer is Open's answer for the server backend when redis-server is not on PATH.
var ErrNoRedisServer = errors.New("redisenv: the server backend needs redis-server on PATH (apt-get install redis-server)")

// needRedisServer is nil where the backend (server or sentinel) can start its redis-server
// processes, else ErrNoRedisServer or, on Windows, an error that is ErrNoRedisServer too and says
// what to use there instead. The lab does not start them on Windows: Redis ships no Windows
// server, and Windows has no process group or parent-death signal to end them with the lab.
func needRedisServer(backend string) error {
	if runtime.GOOS == "windows" {
		return noProcessesHere(backend)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return ErrNoRedisServer
	}
	return nil
}

// noProcessesHere is needRedisServer's answer on Windows.
type noProcessesHere string

func (b noProcessesHere) Error() string {
	return "redisenv: the " + string(b) + " backend starts redis-server processes, which the lab does not do on Windows: " +
		"use the embedded backend (the default), a Redis you run (-redis redis://127.0.0.1:6379/0, e.g. in WSL), " +
		"or containers (a lab built with -tags container, and Docker Desktop)"
}

func (noProcessesHere) Unwrap() error { return ErrNoRedisServer }

// Server is the backend of real redis-server processes on loopback ports: lock nodes, each a
// primary with a replica fed by real REPLICAOF replication through a holdable proxy (replNode),
// and an inventory node.
//
// Hazard: the processes outlive a Go program that exits without Close. On Linux they get SIGKILL
// when the process that started them dies, but their temp dirs stay behind; a program that handles
// SIGINT must call CloseAll before it exits.
type Server struct{ *fleet }

// NewServer starts one lock node (a primary and its replica) and the inventory node.
func NewServer() (*Server, error) { return NewServerNodes(1) }

// NewServerNodes starts n lock nodes, each a primary with its replica and independent of the
// others, and the inventory node: 2n+1 redis-server processes, started at once.
func NewServerNodes(n int) (*Server, error) {
	if err := needRedisServer("server"); err != nil {
		return nil, err
	}
	f, err := openFleet("server", newPrefix(), procLauncher{}, n, nil)
	if err != nil {
		return nil, err
	}
	return &Server{f}, nil
}

// Pids returns the process ids of every redis-server the Server runs now.
func (s *Server) Pids() []int { return s.pids() }

// Dirs returns the temp dirs of the Server's processes, killed ones included.
func (s *Server) Dirs() []string { return s.dirs() }

// pids returns the process ids of every process of a fleet of procs that runs now.
func (f *fleet) pids() []int {
	var pids []int
	for _, rs := range f.servers() {
		if pid, ok := rs.(*proc).running(); ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// dirs returns the temp dirs of a fleet of procs, killed ones included.
func (f *fleet) dirs() []string {
	var dirs []string
	for _, rs := range f.servers() {
		dirs = append(dirs, rs.(*proc).dir)
	}
	return dirs
}

// procLauncher starts redis-server processes on free loopback ports, each with extra after the
// flags every server runs with (redisArgs).
type procLauncher struct{ extra []string }

// start starts one redis-server on a free loopback port, retrying on a fresh port if another
// program took the one it was given.
func (l procLauncher) start(ctx context.Context, role string) (redisServer, error) {
	var last error
	for range 5 {
		p, err := startProc(ctx, role, l.extra)
		if err == nil {
			return p, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		last = err
	}
	return nil, last
}

// proxyHost is the loopback address every process listens on.
func (procLauncher) proxyHost(context.Context, redisServer) (string, error) { return "127.0.0.1", nil }

func (procLauncher) close() {}

// proc is one redis-server process with its own temp dir: a server, or a Sentinel (conf). A
// restart starts a new process on the same port and dir.
type proc struct {
	name    string
	address string
	port    int
	dir     string
	out     *tail
	extra   []string             // a server's flags after redisArgs
	conf    func(p *proc) string // a Sentinel's config file, written into dir at each launch; nil for a server

	mu     sync.Mutex // guards cmd and exited, which a restart replaces
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and been reaped
}

// startProc starts a redis-server with extra after redisArgs on a free loopback port.
func startProc(ctx context.Context, role string, extra []string) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("redisenv: finding a free port for the %s: %w", role, err)
	}
	return runProc(ctx, &proc{name: role, port: port, extra: extra})
}

// runProc gives p (its name, port, and extra or conf set) a temp dir of its own and launches it.
// On an error it leaves nothing behind.
func runProc(ctx context.Context, p *proc) (*proc, error) {
	dir, err := os.MkdirTemp("", "lockstep-redis-"+strings.ReplaceAll(p.name, " ", "-")+"-")
	if err != nil {
		return nil, fmt.Errorf("redisenv: %w", err)
	}
	p.address, p.dir, p.out = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), dir, &tail{}
	if err := p.launch(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// launch starts the process and waits until it answers; on an error it is killed.
func (p *proc) launch(ctx context.Context) error {
	args := append([]string{
		"--port", strconv.Itoa(p.port),
		"--bind", "127.0.0.1",
		"--daemonize", "no",
		"--dir", p.dir,
		"--logfile", "",
	}, redisArgs()...)
	args = append(args, p.extra...)
	if p.conf != nil {
		// A Sentinel reads its config from a file, and rewrites it as its view changes.
		path := filepath.Join(p.dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(p.conf(p)), 0o600); err != nil {
			return fmt.Errorf("redisenv: writing the %s's config: %w", p.name, err)
		}
		args = []string{path, "--sentinel"}
	}
	cmd := exec.Command("redis-server", args...)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisenv: starting redis-server for the %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	if err := p.waitReady(ctx); err != nil {
		p.kill(ctx)
		return err
	}
	return nil
}

func (p *proc) addr() string { return p.address }
func (p *proc) role() string { return p.name }

// lastLine is the last line the process wrote (see tail).
func (p *proc) lastLine() string { return p.out.lastLine() }

func (p *proc) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

// running returns the process id while the process runs.
func (p *proc) running() (int, bool) {
	cmd, exited := p.current()
	select {
	case <-exited:
		return 0, false
	default:
		return cmd.Process.Pid, true
	}
}

// waitReady polls the process with PING until it answers, it exits, ctx ends or startTimeout
// passes. A PONG is not enough: another program may have taken the port between freePort and the
// bind, and our redis-server then dies while the other answers; the answer must come from our
// process.
func (p *proc) waitReady(ctx context.Context) error {
	_, exited := p.current()
	deadline := time.Now().Add(startTimeout)
	for delay := time.Millisecond; ; delay = min(2*delay, 5*time.Millisecond) {
		if ping(p.address) == nil {
			return p.isOurs()
		}
		select {
		case <-exited:
			return fmt.Errorf("redisenv: redis-server for the %s exited at start: %s", p.name, p.out.lastLine())
		case <-ctx.Done():
			return fmt.Errorf("redisenv: redis-server for the %s: %w", p.name, ctx.Err())
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redisenv: redis-server for the %s did not answer PING within %v", p.name, startTimeout)
		}
	}
}

// isOurs checks with INFO that the server answering at the process's address is the process.
func (p *proc) isOurs() error {
	cmd, _ := p.current()
	c := redis.NewClient(claiming(&redis.Options{Addr: p.address, PoolSize: 1, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: 500 * time.Millisecond}))
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redisenv: the server on %s for the %s does not answer INFO: %w", p.address, p.name, err)
	}
	if pid := infoField(info, "process_id"); pid != strconv.Itoa(cmd.Process.Pid) {
		return fmt.Errorf("redisenv: another server (pid %s) answers on %s, the port given to the %s", pid, p.address, p.name)
	}
	return nil
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

// kill sends SIGKILL and waits until the process is reaped.
func (p *proc) kill(context.Context) error {
	cmd, exited := p.current()
	cmd.Process.Kill()
	<-exited
	return nil
}

// outage: a restart took 60–75 ms on a quiet machine and 290 ms on a loaded one; a kill, ~2 ms.
func (p *proc) outage() time.Duration { return 300 * time.Millisecond }

// restart kills the process, empties its dir (a full sync leaves dump.rdb there, which
// redis-server would load at start) and starts a new one on the same port. Hazard: if another
// program takes the port in the instant between, the restart fails rather than move.
func (p *proc) restart(ctx context.Context) error {
	p.kill(ctx)
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("redisenv: emptying the %s's dir: %w", p.name, err)
	}
	if err := os.Mkdir(p.dir, 0o700); err != nil {
		return fmt.Errorf("redisenv: emptying the %s's dir: %w", p.name, err)
	}
	return p.launch(ctx)
}

// remove kills the process and removes its dir.
func (p *proc) remove(ctx context.Context) error {
	p.kill(ctx)
	return os.RemoveAll(p.dir)
}

// freePort asks the kernel for a free loopback port. Hazard: another program may take it before
// redis-server (or Docker) binds it; the launchers retry on a fresh port when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
