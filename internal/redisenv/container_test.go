package redisenv_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/redis/go-redis/v9"
)

// openContainer starts the container backend and removes its containers when the test ends,
// failed or not. It runs only when LAB_REDIS=container asks for the backend (its image may need a
// registry). With no Docker daemon it skips with the reason, as
// testcontainers.SkipIfProviderIsNotHealthy does, except under CI=true, where the backend was
// asked for and a skip would hide its absence.
func openContainer(t *testing.T) *redisenv.Container {
	t.Helper()
	if os.Getenv("LAB_REDIS") != "container" {
		t.Skip("the container backend is tested with LAB_REDIS=container (and LAB_REDIS_IMAGE for a local image)")
	}
	c, err := redisenv.NewContainer()
	if errors.Is(err, redisenv.ErrNoDocker) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// containersLeft lists the containers (running or not) among ids that Docker still has.
func containersLeft(t *testing.T, ids []string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--no-trunc", "--filter", "label="+redisenv.ContainerLabel).Output()
	if err != nil {
		t.Skipf("docker CLI not usable to check for leftovers: %v", err)
	}
	var left []string
	for _, id := range ids {
		if strings.Contains(string(out), id) {
			left = append(left, id)
		}
	}
	return left
}

// TestContainerFailoverLosesHeldWrite is the container backend's promise: a write made before
// HoldReplication survives the failover, a write made after it is lost, every time.
func TestContainerFailoverLosesHeldWrite(t *testing.T) {
	c := openContainer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := redis.NewClient(c.LockOptions())
	defer cl.Close()
	first, second := c.Prefix()+"first", c.Prefix()+"second"
	if err := cl.Set(ctx, first, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.HoldReplication()
	if err := cl.Set(ctx, second, "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Exists(ctx, second); err != nil || !ok {
		t.Fatalf("before the failover the primary must have the second key: %v %v", ok, err)
	}
	start := time.Now()
	if err := c.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("failover took %v", time.Since(start))
	if ok, err := c.Exists(ctx, first); err != nil || !ok {
		t.Errorf("the promoted replica lost the write made before the hold: exists=%v err=%v", ok, err)
	}
	if ok, err := c.Exists(ctx, second); err != nil || ok {
		t.Errorf("the promoted replica has the write made after the hold: exists=%v err=%v", ok, err)
	}
	if err := cl.Set(ctx, c.Prefix()+"third", "3", 0).Err(); err != nil {
		t.Errorf("a lock client did not follow the promoted replica: %v", err)
	}
	if err := c.Failover(ctx); err == nil {
		t.Error("a second failover should fail: there is no replica left")
	}
}

// TestContainerCloseLeavesNothing checks that Close removes every container, the killed primary
// included, and can be called twice.
func TestContainerCloseLeavesNothing(t *testing.T) {
	c := openContainer(t)
	c.HoldReplication()
	if err := c.Failover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids := c.IDs()
	if len(ids) != 3 {
		t.Fatalf("want 3 containers, got %v", ids)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if left := containersLeft(t, ids); len(left) > 0 {
		t.Errorf("containers still there after Close: %v", left)
	}
}

// TestCloseAllRemovesContainers is what the lab's SIGINT handler relies on.
func TestCloseAllRemovesContainers(t *testing.T) {
	c := openContainer(t)
	ids := c.IDs()
	if err := redisenv.CloseAll(); err != nil {
		t.Fatal(err)
	}
	if left := containersLeft(t, ids); len(left) > 0 {
		t.Errorf("containers survived CloseAll: %v", left)
	}
}

// TestContainerRefusedAfterCloseAll checks that once CloseAll has run (a program's interrupt
// handler, just before it exits) the container backend starts nothing more.
func TestContainerRefusedAfterCloseAll(t *testing.T) {
	defer redisenv.RefuseAfterCloseAll()()
	if err := redisenv.CloseAll(); err != nil {
		t.Fatal(err)
	}
	c, err := redisenv.Open("container", redisenv.Options{})
	if err == nil {
		c.Close()
		t.Fatal("Open(container) after CloseAll should fail")
	}
	t.Log(err)
}

// TestContainerNoDocker checks the one-line error when no Docker daemon answers. testcontainers
// resolves the daemon once per process and falls back to the default socket when $DOCKER_HOST does
// not answer, so the check runs in a child test process which, when a daemon listens on the
// default socket, gets a mount namespace with an empty /run (Linux, root).
func TestContainerNoDocker(t *testing.T) {
	if os.Getenv("LOCKSTEP_NO_DOCKER_CHILD") == "1" {
		start := time.Now()
		_, err := redisenv.Open("container", redisenv.Options{})
		if !errors.Is(err, redisenv.ErrNoDocker) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("want one line wrapping ErrNoDocker, got %v", err)
		}
		t.Logf("%v (after %v)", err, time.Since(start))
		return
	}
	args := []string{os.Args[0], "-test.run=^TestContainerNoDocker$", "-test.v"}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
			t.Skipf("a Docker daemon listens on the default socket and unshare -m cannot hide it (%v)", err)
		}
		args = append([]string{"unshare", "-m", "sh", "-c", `mount -t tmpfs none /run && exec "$0" "$@"`}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "LOCKSTEP_NO_DOCKER_CHILD=1", "DOCKER_HOST=tcp://127.0.0.1:1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child test failed: %v\n%s", err, out)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "redisenv:") {
			t.Log(strings.TrimSpace(line))
		}
	}
}
