//go:build container

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
)

// openContainer starts the container backend with one lock node and removes its containers when
// the test ends, failed or not.
func openContainer(t *testing.T) *redisenv.Container { return openContainerNodes(t, 1) }

// openContainerNodes starts the container backend with n lock nodes. It runs only when
// LAB_REDIS=container asks for the backend (its image may need a registry). With no Docker daemon
// it skips with the reason, as testcontainers.SkipIfProviderIsNotHealthy does, except under
// CI=true, where the backend was asked for and a skip would hide its absence.
func openContainerNodes(t *testing.T, n int) *redisenv.Container {
	t.Helper()
	if os.Getenv("LAB_REDIS") != "container" {
		t.Skip("the container backend is tested with LAB_REDIS=container (and LAB_REDIS_IMAGE for a local image)")
	}
	start := time.Now()
	c, err := redisenv.NewContainerNodes(n)
	if errors.Is(err, redisenv.ErrNoDocker) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lock node(s) and the inventory started in %v", n, time.Since(start))
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
	checkFailoverLosesHeldWrite(t, c, c.Nodes()[0])
}

// TestContainerQuorum: three independent lock nodes, started at once, each failing over alone.
func TestContainerQuorum(t *testing.T) {
	c := openContainerNodes(t, 3)
	if ids := c.IDs(); len(ids) != 7 {
		t.Fatalf("want 7 containers, got %v", ids)
	}
	checkQuorum(t, c, 3)
}

// TestContainerRestartForgets: a quorum node's primary container restarts without persistence and
// forgets every key, its replica with it, 20 times in a row; clients reconnect on their own.
func TestContainerRestartForgets(t *testing.T) {
	c := openContainerNodes(t, 3)
	if forgot := checkRestartForgets(t, c, c.Nodes()[2], 20); forgot != 20 {
		t.Errorf("%d/20 restarts forgot the key", forgot)
	}
}

// TestContainerRestartKeepsHold: a held link stays held through a restart; the replica is
// emptied.
func TestContainerRestartKeepsHold(t *testing.T) {
	c := openContainer(t)
	checkRestartKeepsHold(t, c, c.Nodes()[0])
}

// TestContainerWatcherOnQuorum: the referee's watcher on a quorum node sees a DEL, survives a
// restart, and tells an expiry from a change.
func TestContainerWatcherOnQuorum(t *testing.T) {
	checkWatcherOnQuorum(t, openContainerNodes(t, 3))
}

// TestContainerCloseLeavesNothing checks that Close removes every container, restarted and killed
// ones included, and can be called twice.
func TestContainerCloseLeavesNothing(t *testing.T) {
	c := openContainerNodes(t, 2)
	ctx := context.Background()
	if err := c.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	c.Nodes()[1].HoldReplication()
	if err := c.Nodes()[1].Failover(ctx); err != nil {
		t.Fatal(err)
	}
	ids := c.IDs()
	if len(ids) != 5 {
		t.Fatalf("want 5 containers, got %v", ids)
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
