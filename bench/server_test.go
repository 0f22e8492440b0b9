package bench

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisAddr is the address of the redis-server this test binary started, or "" if it could not
// start one; skipReason then says why.
var redisAddr, skipReason string

func TestMain(m *testing.M) {
	stop, err := startRedis()
	if err != nil {
		skipReason = err.Error()
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// needRedis skips tb when no redis-server is running for this binary.
func needRedis(tb testing.TB) {
	tb.Helper()
	if redisAddr == "" {
		tb.Skipf("skipping: no redis-server to benchmark against: %s", skipReason)
	}
}

// startRedis starts a throwaway redis-server on a free 127.0.0.1 port with no persistence and its
// own temporary --dir, waits until it answers PING, and returns the function that kills it and
// removes the dir.
func startRedis() (stop func(), err error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH (install it, e.g. apt-get install -y redis-server)")
	}
	dir, err := os.MkdirTemp("", "lockstep-bench-redis-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir)
	cmd.Stdout, cmd.Stderr = &out, &out
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			redisAddr = addr
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("redis-server on %s did not answer PING: %v; its output: %s", addr, err, out.String())
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
