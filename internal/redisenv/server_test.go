package redisenv_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"go.uber.org/goleak"
)

// needRedisServer skips the test when redis-server is not on PATH, and fails it under CI=true,
// where a missing backend must never pass silently.
func needRedisServer(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not on PATH, and CI=true forbids skipping: apt-get install redis-server")
		}
		t.Skip("redis-server is not on PATH (apt-get install redis-server); skipping the server backend")
	}
}

// alive reports whether a process pid exists (signal 0 probes without signalling).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}

// openServer starts the server backend with one lock node and closes it when the test ends,
// failed or not.
func openServer(t *testing.T) *redisenv.Server { return openServerNodes(t, 1) }

// openServerNodes starts the server backend with n lock nodes and closes it when the test ends.
func openServerNodes(t *testing.T, n int) *redisenv.Server {
	t.Helper()
	needRedisServer(t)
	start := time.Now()
	s, err := redisenv.NewServerNodes(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lock node(s) and the inventory started in %v", n, time.Since(start))
	t.Cleanup(func() { s.Close() })
	return s
}

// TestServerFailoverLosesHeldWrite is the server backend's promise: a write made before
// HoldReplication survives the failover, a write made after it is lost, every time.
func TestServerFailoverLosesHeldWrite(t *testing.T) {
	s := openServer(t)
	before := s.Pids()
	checkFailoverLosesHeldWrite(t, s, s.Nodes()[0])
	if len(s.Pids()) != len(before)-1 {
		t.Errorf("the primary should be dead: pids %v, then %v", before, s.Pids())
	}
}

// TestServerQuorum: three independent lock nodes, started at once, each failing over alone.
func TestServerQuorum(t *testing.T) {
	s := openServerNodes(t, 3)
	if pids, dirs := s.Pids(), s.Dirs(); len(pids) != 7 || len(dirs) != 7 {
		t.Fatalf("want 7 processes and 7 dirs, got %v %v", pids, dirs)
	}
	checkQuorum(t, s, 3)
}

// TestServerRestartForgets: a quorum node's primary restarts without persistence and forgets
// every key, its replica with it, 20 times in a row; clients reconnect on their own.
func TestServerRestartForgets(t *testing.T) {
	s := openServerNodes(t, 3)
	pids := s.Pids()
	if forgot := checkRestartForgets(t, s, s.Nodes()[2], 20); forgot != 20 {
		t.Errorf("%d/20 restarts forgot the key", forgot)
	}
	if got := s.Pids(); len(got) != len(pids)-1 {
		t.Errorf("after 21 restarts and a failover, want %d processes, got %v", len(pids)-1, got)
	}
}

// TestServerRestartKeepsHold: a held link stays held through a restart; the replica is emptied.
func TestServerRestartKeepsHold(t *testing.T) {
	s := openServer(t)
	checkRestartKeepsHold(t, s, s.Nodes()[0])
}

// TestServerWatcherOnQuorum: the referee's watcher on a quorum node sees a DEL, survives a
// restart, and tells an expiry from a change.
func TestServerWatcherOnQuorum(t *testing.T) {
	checkWatcherOnQuorum(t, openServerNodes(t, 3))
}

// TestServerWatchNeedsKeyspaceEvents: a node that stopped publishing keyspace events cannot be
// watched (it would look unchanged for ever), and says so.
func TestServerWatchNeedsKeyspaceEvents(t *testing.T) {
	s := openServer(t)
	node := s.Nodes()[0]
	if err := node.Admin().ConfigSet(context.Background(), "notify-keyspace-events", "").Err(); err != nil {
		t.Fatal(err)
	}
	if w, err := node.Watch(s.Prefix(), ""); err == nil {
		w.Close()
		t.Fatal("Watch accepted a node that publishes no keyspace events")
	} else {
		t.Log(err)
	}
}

// TestServerCloseLeavesNothing checks that Close kills every redis-server, restarted and killed
// ones included, removes every temp dir, stops every goroutine it started, and can be called
// twice.
func TestServerCloseLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	needRedisServer(t)
	s, err := redisenv.NewServerNodes(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	s.Nodes()[1].HoldReplication()
	if err := s.Nodes()[1].Failover(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := s.Nodes()[0].Watch(s.Prefix(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pids, dirs := s.Pids(), s.Dirs()
	if len(pids) != 4 || len(dirs) != 5 {
		t.Fatalf("want 4 processes and 5 dirs, got %v %v", pids, dirs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("redis-server %d is still there after Close", pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp dir %s is still there after Close (%v)", d, err)
		}
	}
}

// TestCloseAllClosesOpenEnvs is what the lab's SIGINT handler relies on.
func TestCloseAllClosesOpenEnvs(t *testing.T) {
	s := openServer(t)
	pids := s.Pids()
	if err := redisenv.CloseAll(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("redis-server %d survived CloseAll", pid)
		}
	}
}

// TestServerCloseAllDuringStart is Ctrl-C while a quorum starts: whenever CloseAll strikes, the
// start either fails or is closed with the rest, and no redis-server or temp dir is left.
func TestServerCloseAllDuringStart(t *testing.T) {
	needRedisServer(t)
	closeAllDuringStart(t, 50*time.Millisecond, func() (io.Closer, error) { return redisenv.NewServerNodes(3) })
}

// closeAllDuringStart calls CloseAll while start runs, 0, step, 2 × step… after it began (ten
// times): the start fails or is closed with the rest, and no redis-server or temp dir is left.
func closeAllDuringStart(t *testing.T, step time.Duration, start func() (io.Closer, error)) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc to find this process's children in")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for i := range 10 {
		done := make(chan error, 1)
		go func() {
			s, err := start()
			if err == nil {
				err = s.Close()
			}
			done <- err
		}()
		time.Sleep(time.Duration(i) * step)
		if err := redisenv.CloseAll(); err != nil {
			t.Fatal(err)
		}
		t.Logf("CloseAll after %v: the start said %v", time.Duration(i)*step, <-done)
		if kids := redisChildren(t); len(kids) > 0 {
			t.Errorf("redis-server processes left: %v", kids)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("temp dirs left: %v", left)
		}
	}
}

// redisChildren lists the pids of this process's redis-server children.
func redisChildren(t *testing.T) []string {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid …
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if s[open+1:end] == "redis-server" && len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) {
			kids = append(kids, strings.TrimSpace(s[:open]))
		}
	}
	return kids
}

func TestOpenNames(t *testing.T) {
	_, err := redisenv.Open("docker", redisenv.Options{})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "server") {
		t.Errorf("an unknown backend should fail with one line naming the choices, got %v", err)
	}
	e, err := redisenv.Open("", redisenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestServerMissingRedisServer checks the one-line error when redis-server is not on PATH.
func TestServerMissingRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := redisenv.Open("server", redisenv.Options{})
	if !errors.Is(err, redisenv.ErrNoRedisServer) {
		t.Fatalf("want ErrNoRedisServer, got %v", err)
	}
}
