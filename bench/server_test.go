package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// servers are the redis-servers this test binary started, one per node a contender may span. The
// first is started by TestMain; more are started on the first call that needs them. Hazard: they
// all run on the same cores as the benchmark, so a busy server slows every lock in the rotation.
var servers struct {
	mu    sync.Mutex
	addrs []string
	stops []func()
	// err is why the first server could not start: every benchmark then skips with it.
	err error
}

// TestMain starts the first redis-server, runs the tests and benchmarks, prints the benchmarks'
// results (report) and stops every server it started. Hazard: a binary killed by -timeout skips
// all of it; Pdeathsig then stops the servers on Linux.
func TestMain(m *testing.M) {
	if _, err := nodeAddrs(1); err != nil {
		servers.err = err
	}
	code := m.Run()
	report(os.Stdout)
	servers.mu.Lock()
	for _, stop := range servers.stops {
		stop()
	}
	servers.mu.Unlock()
	os.Exit(code)
}

// needNodes returns the addresses of n independent redis-servers, starting the missing ones, and
// skips tb when there is no redis-server to start. Hazard: a server that fails to start fails tb;
// it never silently hands back fewer nodes than were asked for.
func needNodes(tb testing.TB, n int) []string {
	tb.Helper()
	if servers.err != nil {
		tb.Skipf("skipping: no redis-server to benchmark against: %v", servers.err)
	}
	addrs, err := nodeAddrs(n)
	if err != nil {
		tb.Fatalf("starting redis-server node %d of %d: %v", len(addrs)+1, n, err)
	}
	return addrs
}

// nodeAddrs returns the first n servers' addresses, starting servers until there are n; on an
// error it returns those that run.
func nodeAddrs(n int) ([]string, error) {
	servers.mu.Lock()
	defer servers.mu.Unlock()
	for len(servers.addrs) < n {
		addr, stop, err := startRedis()
		if err != nil {
			return slices.Clone(servers.addrs), err
		}
		servers.addrs = append(servers.addrs, addr)
		servers.stops = append(servers.stops, stop)
	}
	return slices.Clone(servers.addrs[:n]), nil
}

// startRedis starts a throwaway redis-server on a free 127.0.0.1 port with no persistence and its
// own temporary --dir, waits until it answers PING, and returns its address and the function that
// kills it and removes the dir. Hazard: the port is free when asked for and taken by the server a
// moment later; another process can take it in between, and the server then fails to start.
func startRedis() (addr string, stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, fmt.Errorf("redis-server not found on PATH (install it, e.g. apt-get install -y redis-server)")
	}
	dir, err := os.MkdirTemp("", "lockstep-bench-redis-")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("redis-server on %s did not answer PING: %v; its output: %s", addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
