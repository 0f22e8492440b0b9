package redisenv_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/redis/go-redis/v9"
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

// openServer starts the server backend and closes it when the test ends, failed or not.
func openServer(t *testing.T) *redisenv.Server {
	t.Helper()
	needRedisServer(t)
	s, err := redisenv.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestServerFailoverLosesHeldWrite is the server backend's promise: a write made before
// HoldReplication survives the failover, a write made after it is lost, every time.
func TestServerFailoverLosesHeldWrite(t *testing.T) {
	s := openServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := redis.NewClient(s.LockOptions())
	defer c.Close()
	first, second := s.Prefix()+"first", s.Prefix()+"second"
	if err := c.Set(ctx, first, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.HoldReplication()
	if err := c.Set(ctx, second, "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, second).Result(); err != nil || n != 1 {
		t.Fatalf("before the failover the primary must have the second key: %v %v", n, err)
	}
	before := s.Pids()
	start := time.Now()
	if err := s.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("failover took %v", time.Since(start))
	if len(s.Pids()) != len(before)-1 {
		t.Errorf("the primary should be dead: pids %v, then %v", before, s.Pids())
	}
	if n, err := c.Exists(ctx, first).Result(); err != nil || n != 1 {
		t.Errorf("the promoted replica lost the write made before the hold: exists=%v err=%v", n, err)
	}
	if n, err := c.Exists(ctx, second).Result(); err != nil || n != 0 {
		t.Errorf("the promoted replica has the write made after the hold: exists=%v err=%v", n, err)
	}
	// The old client follows the new primary on its own.
	if err := c.Set(ctx, s.Prefix()+"third", "3", 0).Err(); err != nil {
		t.Errorf("a lock client did not follow the promoted replica: %v", err)
	}
	if err := s.Failover(ctx); err == nil {
		t.Error("a second failover should fail: there is no replica left")
	}
}

// TestServerCloseLeavesNothing checks that Close kills every redis-server and removes every
// temp dir, and can be called twice.
func TestServerCloseLeavesNothing(t *testing.T) {
	s := openServer(t)
	pids, dirs := s.Pids(), s.Dirs()
	if len(pids) != 3 || len(dirs) != 3 {
		t.Fatalf("want 3 processes and 3 dirs, got %v %v", pids, dirs)
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
