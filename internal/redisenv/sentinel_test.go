package redisenv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// needSentinel skips the test unless LAB_REDIS=sentinel asks for the sentinel backend: its
// failovers take seconds each (Sentinel's own election), so its tests run in the CI step that
// plays the step suite on it. Under CI=true a missing redis-server fails the test.
func needSentinel(t *testing.T) {
	t.Helper()
	if os.Getenv("LAB_REDIS") != "sentinel" {
		t.Skip("the sentinel backend is tested with LAB_REDIS=sentinel")
	}
	needRedisServer(t)
}

// openSentinel starts the sentinel backend with one lock node and closes it when the test ends,
// failed or not.
func openSentinel(t *testing.T) *redisenv.Sentinel { return openSentinelNodes(t, 1) }

// openSentinelNodes starts the sentinel backend with n lock nodes and closes it when the test
// ends.
func openSentinelNodes(t *testing.T, n int) *redisenv.Sentinel {
	t.Helper()
	needSentinel(t)
	start := time.Now()
	s, err := redisenv.NewSentinelNodes(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d lock node(s) with their Sentinels and the inventory started in %v", n, time.Since(start))
	t.Cleanup(func() { s.Close() })
	return s
}

// sentinelsName asks each of node's Sentinels which address it gives for the node's primary.
func sentinelsName(t *testing.T, ctx context.Context, node redisenv.Node) []string {
	t.Helper()
	var out []string
	for _, a := range redisenv.SentinelAddrs(node) {
		c := redis.NewSentinelClient(&redis.Options{Addr: a})
		addr, err := c.GetMasterAddrByName(ctx, node.Name()).Result()
		c.Close()
		if err != nil {
			t.Fatalf("asking the Sentinel at %s: %v", a, err)
		}
		out = append(out, addr[0]+":"+addr[1])
	}
	return out
}

// TestSentinelFailoverLosesHeldWrite is the sentinel backend's promise, the server backend's: a
// write made before HoldReplication survives the failover that Sentinel carries out, a write made
// after it is lost, and the failover client of a buyer follows.
func TestSentinelFailoverLosesHeldWrite(t *testing.T) {
	s := openSentinel(t)
	before := s.Pids()
	checkFailoverLosesHeldWrite(t, s, s.Nodes()[0])
	if len(s.Pids()) != len(before)-1 {
		t.Errorf("the primary should be dead: pids %v, then %v", before, s.Pids())
	}
}

// TestSentinelClientFollowsFailover: a client of NewClient that wrote before the failover writes
// to the promoted primary after it, the same client, not made again; the Sentinels name the
// promoted replica; the lab's Admin, its watcher (Resync) and Options reach it too; the
// Sentinels' own connections are not taken for strangers.
func TestSentinelClientFollowsFailover(t *testing.T) {
	s := openSentinel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	node := s.Nodes()[0]
	pre := s.Prefix()
	c := node.NewClient()
	defer c.Close()
	c.AddHook(claimHook{}) // as a buyer's hook claims its connections
	w, err := node.Watch(pre, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Observe(ctx, func() {
		if err := c.Set(ctx, pre+"before", "1", 0).Err(); err != nil {
			t.Errorf("SET before the failover: %v", err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	replica := redisenv.ReplicaAddr(node)
	if got := sentinelsName(t, ctx, node); slices.Contains(got, replica) {
		t.Fatalf("before the failover a Sentinel names the replica: %v", got)
	}
	node.HoldReplication()
	start := time.Now()
	if err := node.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Sentinel's failover took %v", time.Since(start))
	for i, a := range sentinelsName(t, ctx, node) {
		if a != replica {
			t.Errorf("Sentinel %d names %s as the primary, not the promoted replica %s", i+1, a, replica)
		}
	}
	if err := c.Set(ctx, pre+"after", "2", 0).Err(); err != nil {
		t.Fatalf("the client that wrote before the failover cannot write after it: %v", err)
	}
	if o := node.Options(); o.Addr != replica {
		t.Errorf("Options reach %s, not the promoted primary %s", o.Addr, replica)
	}
	if !exists(t, ctx, node.Admin(), pre+"after") || !exists(t, ctx, node.Admin(), pre+"before") {
		t.Error("the promoted replica (Admin's) has not the write made after the failover, or lost the one before")
	}
	kv, err := w.Resync(ctx)
	if err != nil {
		t.Fatalf("the watcher's Resync against the promoted replica: %v", err)
	}
	if len(kv) != 2 {
		t.Errorf("Resync after the failover reads %+v, want before and after", kv)
	}
	ch, err := w.Observe(ctx, func() { c.Del(ctx, pre+"after") })
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Keys) != 1 || ch.Keys[0].Key != "after" || ch.Keys[0].After.Exists || len(ch.Unseen) > 0 {
		t.Errorf("the watcher on the promoted replica does not see a DEL: %+v", ch)
	}
	if st := s.Strangers(ctx); len(st) > 0 {
		t.Errorf("the lab's own and the Sentinels' connections are taken for strangers: %v", st)
	}
	stray := redis.NewClient(&redis.Options{Addr: replica})
	defer stray.Close()
	stray.Set(ctx, pre+"stray", 1, 0)
	if st := s.Strangers(ctx); len(st) != 1 {
		t.Errorf("a client the lab did not hand out: Strangers says %v", st)
	}
}

// claimHook claims every connection its client dials, as a buyer's hook does (redisenv.Claim).
type claimHook struct{}

func (claimHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			redisenv.Claim(c)
		}
		return c, err
	}
}
func (claimHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (claimHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestSentinelFailoverAfterLongHold: a failover that strikes more than 10 × down-after-milliseconds
// after HoldReplication still promotes the replica and loses the held write. Sentinel promotes
// no replica whose link has been down that long; the held link stays open and silent, as a
// partition the replica has not noticed yet. (With the link closed at the hold, the Sentinels
// refused: -failover-abort-no-good-slave, until Failover gave up after 30 s.)
func TestSentinelFailoverAfterLongHold(t *testing.T) {
	s := openSentinel(t)
	ctx := context.Background()
	node := s.Nodes()[0]
	c := node.NewClient()
	defer c.Close()
	kept, lost := s.Prefix()+"kept", s.Prefix()+"lost"
	if err := c.Set(ctx, kept, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	node.HoldReplication()
	if err := c.Set(ctx, lost, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10*redisenv.SentinelDownAfter() + 5*time.Second)
	if err := node.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(t, ctx, c, kept) || exists(t, ctx, c, lost) {
		t.Errorf("after a long hold: the write before it kept %v, the held one kept %v", exists(t, ctx, c, kept), exists(t, ctx, c, lost))
	}
}

// TestSentinelQuorum: three independent lock nodes, each with Sentinels of its own, started at
// once, each failing over alone.
func TestSentinelQuorum(t *testing.T) {
	s := openSentinelNodes(t, 3)
	if pids, dirs := s.Pids(), s.Dirs(); len(pids) != 16 || len(dirs) != 16 {
		t.Fatalf("want 16 processes and 16 dirs (3 × (2 servers + 3 Sentinels) + the inventory), got %v %v", pids, dirs)
	}
	checkQuorum(t, s, 3)
	ctx := context.Background()
	for i, node := range s.Nodes() {
		want := node.Options().Addr // the lab's view: the promoted replica on node 2
		for _, a := range sentinelsName(t, ctx, node) {
			if a != want {
				t.Errorf("%s: a Sentinel names %s, the lab %s (node %d)", node.Name(), a, want, i+1)
			}
		}
	}
}

// TestSentinelRestartForgets: a quorum node's primary restarts without persistence and forgets
// every key, its replica with it, 20 times in a row, and no Sentinel takes a restart for the
// primary's death (Restart fails if one does); clients reconnect on their own.
func TestSentinelRestartForgets(t *testing.T) {
	s := openSentinelNodes(t, 3)
	pids := s.Pids()
	if forgot := checkRestartForgets(t, s, s.Nodes()[2], 20); forgot != 20 {
		t.Errorf("%d/20 restarts forgot the key", forgot)
	}
	if got := s.Pids(); len(got) != len(pids)-1 {
		t.Errorf("after 21 restarts and a failover, want %d processes, got %v", len(pids)-1, got)
	}
	// The failover checkRestartForgets stages after the restarts is the only time the Sentinels
	// may find the primary down, each once, and switch, each once.
	log := redisenv.SentinelLog(s.Nodes()[2])
	if strings.Count(log, "+sdown master") != 3 || strings.Count(log, "+switch-master") != 3 {
		t.Errorf("the Sentinels took a restart for a death:\n%s", log)
	}
}

// TestSentinelRestartKeepsHold: a held link stays held through a restart; the replica is emptied.
func TestSentinelRestartKeepsHold(t *testing.T) {
	s := openSentinel(t)
	checkRestartKeepsHold(t, s, s.Nodes()[0])
}

// TestSentinelWatcherOnQuorum: the referee's watcher on a Sentinel-watched quorum node sees a DEL,
// survives a restart, and tells an expiry from a change.
func TestSentinelWatcherOnQuorum(t *testing.T) {
	checkWatcherOnQuorum(t, openSentinelNodes(t, 3))
}

// TestSentinelCloseLeavesNothing checks that Close kills every redis-server and Sentinel,
// restarted and killed ones included, removes every temp dir, stops every goroutine it started
// (a failover client's included, once closed), and can be called twice.
func TestSentinelCloseLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	needSentinel(t)
	s, err := redisenv.NewSentinelNodes(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	c := s.Nodes()[1].NewClient()
	if err := c.Set(ctx, s.Prefix()+"k", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Nodes()[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	s.Nodes()[1].HoldReplication()
	if err := s.Nodes()[1].Failover(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, s.Prefix()+"k", 2, 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	w, err := s.Nodes()[0].Watch(s.Prefix(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	pids, dirs := s.Pids(), s.Dirs()
	if len(pids) != 10 || len(dirs) != 11 {
		t.Fatalf("want 10 processes and 11 dirs, got %v %v", pids, dirs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	checkGone(t, pids, dirs)
}

// TestSentinelCloseDuringFailover is Ctrl-C in the middle of Sentinel's election: Close does
// not wait it out, the Failover in progress fails, and nothing is left. (No Sentinel can find the
// primary down before down-after-milliseconds, 3 s, so Close comes well inside the election.)
func TestSentinelCloseDuringFailover(t *testing.T) {
	needSentinel(t)
	s, err := redisenv.NewSentinelNodes(1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pids, dirs := s.Pids(), s.Dirs()
	node := s.Nodes()[0]
	node.HoldReplication()
	done := make(chan error, 1)
	go func() { done <- node.Failover(context.Background()) }()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	ferr := <-done
	t.Logf("Close took %v; the Failover said: %v", took, ferr)
	if ferr == nil {
		t.Error("a Failover interrupted by Close succeeded")
	}
	checkGone(t, pids, dirs)
}

// checkGone fails the test for each of pids still running and each of dirs still there.
func checkGone(t *testing.T, pids []int, dirs []string) {
	t.Helper()
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("process %d is still there", pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("temp dir %s is still there (%v)", d, err)
		}
	}
}

// TestSentinelCloseAll is what the lab's SIGINT handler relies on: CloseAll leaves no server,
// Sentinel or temp dir of an open sentinel backend.
func TestSentinelCloseAll(t *testing.T) {
	s := openSentinel(t)
	pids, dirs := s.Pids(), s.Dirs()
	if err := redisenv.CloseAll(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, pids, dirs)
}

// TestSentinelCloseAllDuringStart is Ctrl-C while a Sentinel-watched quorum starts: whenever
// CloseAll strikes, the start either fails or is closed with the rest, and no redis-server,
// Sentinel or temp dir is left.
func TestSentinelCloseAllDuringStart(t *testing.T) {
	needSentinel(t)
	closeAllDuringStart(t, 150*time.Millisecond, func() (io.Closer, error) { return redisenv.NewSentinelNodes(3) })
}

// failingChild is set in the child that TestSentinelFailedTestLeavesNothing runs.
const failingChild = "LOCKSTEP_SENTINEL_FAILING_CHILD"

// TestSentinelFailingChild is not a test of its own: TestSentinelFailedTestLeavesNothing runs it
// in a child process, where it opens the sentinel backend, says its processes and dirs, and
// fails.
func TestSentinelFailingChild(t *testing.T) {
	if os.Getenv(failingChild) != "1" {
		t.Skip("run by TestSentinelFailedTestLeavesNothing")
	}
	s := openSentinelNodes(t, 2)
	fmt.Printf("pids %v\ndirs %s\n", s.Pids(), strings.Join(s.Dirs(), " "))
	t.Fatal("failing on purpose, with the backend open")
}

// TestSentinelFailedTestLeavesNothing: a test that fails with a sentinel backend open (closed by
// its t.Cleanup, as openSentinel arranges) leaves no redis-server, Sentinel or temp dir behind,
// once its test binary has exited.
func TestSentinelFailedTestLeavesNothing(t *testing.T) {
	needSentinel(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSentinelFailingChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), failingChild+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "failing on purpose") {
		t.Fatalf("the child should have failed on purpose: %v\n%s", err, out)
	}
	var pids []int
	var dirs []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "pids ["); ok {
			for _, f := range strings.Fields(strings.TrimSuffix(rest, "]")) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
		}
		if rest, ok := strings.CutPrefix(sc.Text(), "dirs "); ok {
			dirs = strings.Fields(rest)
		}
	}
	if len(pids) != 11 || len(dirs) != 11 {
		t.Fatalf("the child should have said 11 processes and 11 dirs:\n%s", out)
	}
	checkGone(t, pids, dirs)
}

// TestSentinelFailoverTimes measures Sentinel's failovers, each on a freshly started node (as a
// scenario's): from the primary's kill until every Sentinel names the promoted replica and it
// takes a write. LAB_SENTINEL_RUNS sets how many; it is skipped without it.
func TestSentinelFailoverTimes(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("LAB_SENTINEL_RUNS"))
	if runs == 0 {
		t.Skip("set LAB_SENTINEL_RUNS to measure Sentinel's failovers")
	}
	needSentinel(t)
	var took []time.Duration
	for range runs {
		s, err := redisenv.NewSentinelNodes(1)
		if err != nil {
			t.Fatal(err)
		}
		node := s.Nodes()[0]
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c := node.NewClient()
		c.Set(ctx, s.Prefix()+"k", 1, 0)
		node.HoldReplication()
		start := time.Now()
		err = node.Failover(ctx)
		took = append(took, time.Since(start))
		if err == nil {
			err = c.Set(ctx, s.Prefix()+"k", 2, 0).Err()
		}
		c.Close()
		cancel()
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d failovers: %v", runs, took)
	slices.Sort(took)
	t.Logf("min %v, median %v, max %v; Outage %v", took[0], took[len(took)/2], took[len(took)-1],
		redisenv.SentinelOutage())
}
