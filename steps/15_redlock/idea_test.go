package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/15_redlock"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: the lock is held only on a majority of three independent nodes, and only
// while the lease, less the time the asking took and the clocks' drift, has time left. A try that
// does not get both gives back what it got on every node.
//
// Each test runs in a testing/synctest bubble: the three servers, the clients' timeouts, the pauses
// and the stalls the test puts in the way all run on the bubble's fake clock, which moves only when
// every goroutine waits. A round trip to an in-memory server takes no time on it: the only time a
// try spends is the time the test makes it spend.

const key = "lock:product:1001"

// node is one lock server and the process's client to it, which counts what the server answered.
type node struct {
	m     *redisenv.Mini
	rdb   *redis.Client
	taken atomic.Int32 // lock.lua answered {1, holds}: this node holds the lock for the request
	freed atomic.Int32 // unlock.lua answered (it alone of the step's scripts takes one argument)
}

// stall holds back each reply to the step's scripts once it has arrived; nil answers at once.
type stall func(ctx context.Context, cmd redis.Cmder) error

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// cluster starts three miniredis servers, each with its client, and one process's Locker on them.
// Call it inside the bubble.
func cluster(t *testing.T, ttl time.Duration, late stall) ([]*node, steps.Locker) {
	t.Helper()
	var nodes []*node
	var clients []*redis.Client
	for range 3 {
		m, _ := steptest.Mini(t) // closed when the test ends, after the clients below
		o := m.Options()
		o.MaxRetries, o.DialerRetries = -1, 1
		n := &node{m: m, rdb: redis.NewClient(o)}
		n.rdb.AddHook(counter{n, late})
		nodes = append(nodes, n)
		clients = append(clients, n.rdb)
	}
	life, die := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	l := lock.New(steps.Proc{ID: "buyer-1", Redis: clients[0], Nodes: clients, TTL: ttl, Ctx: life,
		Go: func(f func(context.Context)) {
			wg.Add(1)
			go func() { defer wg.Done(); f(life) }()
		}})
	t.Cleanup(func() {
		die()
		wg.Wait()
		for _, n := range nodes {
			n.rdb.Close()
		}
	})
	return nodes, l
}

// counter is a go-redis hook that counts each node's answers to the step's scripts, and stalls
// each reply after it has arrived when asked to.
type counter struct {
	n    *node
	late stall
}

func (h counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name != "evalsha" && name != "eval" {
			return err // a connection's own handshake (HELLO, CLIENT …) is not the step's
		}
		// EVALSHA sha 1 key owner [ttl]: lock.lua and renew.lua pass the TTL, unlock.lua does not.
		if c, ok := cmd.(*redis.Cmd); ok && err == nil {
			if r, err := c.Int64Slice(); err == nil && len(r) == 2 && r[0] == 1 {
				h.n.taken.Add(1)
			} else if len(c.Args()) == 5 {
				h.n.freed.Add(1)
			}
		}
		if h.late != nil && err == nil {
			err = h.late(ctx, cmd)
		}
		return err
	}
}

// One node out of reach (closed) and the lock is still taken: two of three are a majority. With
// two out of reach (answering errors) it is not, and every node gives back what the request got.
func TestMajority(t *testing.T) {
	t.Run("one node down: a majority", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			const ttl = time.Second
			nodes, l := cluster(t, ttl, nil)
			nodes[2].m.Close()
			req, done := lock.WithRequest(context.Background())
			defer done()
			if ok, err := l.Lock(req, key); err != nil || !ok {
				t.Fatalf("Lock with 2 of 3 nodes up = %v, %v; want true", ok, err)
			}
			for i, n := range nodes[:2] {
				if !n.m.Exists(key) || n.m.HGet(key, ownerOf(t, n.m)) != "1" {
					t.Errorf("node %d does not hold the lock for the request", i)
				}
			}
			if err := l.Unlock(req, key); err != nil {
				t.Errorf("Unlock = %v; want nil (the 2 nodes up gave the lock back)", err)
			}
			for i, n := range nodes[:2] {
				if n.m.Exists(key) {
					t.Errorf("node %d still holds the lock after Unlock", i)
				}
			}
		})
	})

	t.Run("two nodes down: no majority, all given back", func(t *testing.T) {
		bubble(t, func(t *testing.T) {
			const ttl = 400 * time.Millisecond // each node has TTL/4 = 100 ms to answer
			nodes, l := cluster(t, ttl, nil)
			nodes[1].m.SetError("ERR node out of reach")
			nodes[2].m.SetError("ERR node out of reach")
			req, done := lock.WithRequest(context.Background())
			defer done()
			// A few tries (one every TTL/4 to TTL/2), not the whole budget of 10 TTL.
			ctx, cancel := context.WithTimeout(req, 3*ttl)
			defer cancel()
			ok, err := l.Lock(ctx, key)
			// At once, before the last try's lease could have run out: a key still here was not given back.
			held := nodes[0].m.Exists(key)
			if ok || (err != nil && !errors.Is(err, context.DeadlineExceeded)) {
				t.Fatalf("Lock with 1 of 3 nodes up = %v, %v; want false", ok, err)
			}
			taken, freed := nodes[0].taken.Load(), nodes[0].freed.Load()
			t.Logf("node 0 took the lock %d times and gave it back %d times", taken, freed)
			// Every pause is shorter than TTL/2, and a try takes no time on the bubble's clock: the
			// last try before the deadline came after more than 2.5 TTL, so after at least 6 pauses.
			if least := int32(3*ttl/(ttl/2)) + 1; taken < least {
				t.Errorf("node 0 took the lock %d times; want a try after every pause (≥ %d in 3 TTL)", taken, least)
			}
			if freed < taken {
				t.Errorf("node 0 gave back %d of the %d locks it took: a losing try must give back on every node", freed, taken)
			}
			if held {
				t.Errorf("node 0 still holds the request's lock after Lock gave up")
			}
		})
	})
}

// A node that answered "yes" too late is no help: every node took the lock, but the answers came
// back after the lease less the drift was spent, so the try loses (the lease could be gone before
// the holder even knew it had it), and the lock is given back on every node.
func TestValidityRanOut(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = 400 * time.Millisecond
		// Each reply is held back a whole lease after it arrived (a stall in the client: the per-node
		// timeout, which bounds the network read, does not see it; the monotonic clock does).
		nodes, l := cluster(t, ttl, func(ctx context.Context, cmd redis.Cmder) error {
			time.Sleep(ttl)
			return nil
		})
		req, done := lock.WithRequest(context.Background())
		defer done()
		ctx, cancel := context.WithTimeout(req, ttl/2) // one try: it has ended by the time the try is judged
		defer cancel()
		ok, err := l.Lock(ctx, key)
		if ok {
			t.Fatalf("Lock = true, %v; want false: the majority came back after the lease was spent", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock's error = %v; want the context's deadline (it had ended during the losing try)", err)
		}
		for i, n := range nodes {
			if n.taken.Load() != 1 {
				t.Errorf("node %d took the lock %d times; want 1: every node said yes to the one try", i, n.taken.Load())
			}
			if n.freed.Load() != 1 {
				t.Errorf("node %d ran unlock.lua %d times; want 1: the losing try gives back on every node", i, n.freed.Load())
			}
		}
	})
}

// ownerOf is the one owner field of the lock hash on m.
func ownerOf(t *testing.T, m *redisenv.Mini) string {
	t.Helper()
	f, err := m.HKeys(key)
	if err != nil || len(f) != 1 {
		t.Fatalf("the lock hash has fields %v (%v); want one owner", f, err)
	}
	return f[0]
}
