package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/side_wait"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This road's idea: after its lock write, Lock asks the server to wait for a replica (WAIT 1
// TTL/4), and takes the lock only once one has acknowledged it; with none, it gives the key back
// and refuses. A failover then promotes a replica that has the lock; and while the replica lags,
// every acquisition is refused, TTL/4 after it was asked for.
//
// Each test runs in a testing/synctest bubble on the embedded backend's lock node, a miniredis
// primary with a miniredis replica it feeds every write, which answers WAIT itself: 1 while it
// feeds, 0 once its feed is held back (HoldReplication) or after a failover. A round trip takes no
// time on the bubble's clock, so what the tests measure is WAIT's own wait.

const (
	key = "lock:product:1001"
	ttl = 100 * time.Millisecond
)

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// recorder remembers every command its client sends, as the server receives it ("[wait 1 25]"),
// but a new connection's handshake.
type recorder struct {
	mu   sync.Mutex
	cmds []string
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !redisenv.Handshake(cmd) {
			r.mu.Lock()
			r.cmds = append(r.cmds, fmt.Sprint(cmd.Args()))
			r.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// since returns the commands sent from the n-th on.
func (r *recorder) since(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.cmds[n:]...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cmds)
}

// world is one embedded lock node and its processes, closed when the test ends.
type world struct {
	t    *testing.T
	node redisenv.Node
	life context.Context
	wg   sync.WaitGroup
}

func newWorld(t *testing.T) *world {
	env, err := redisenv.NewEmbeddedNodes(1)
	if err != nil {
		t.Fatal(err)
	}
	life, die := context.WithCancel(context.Background())
	w := &world{t: t, node: env.Nodes()[0], life: life}
	t.Cleanup(func() {
		die()
		w.wg.Wait()
		env.Close()
	})
	return w
}

// process is one buyer: its own client of the node (recorded, then fed to the replica through
// the node's hook, as the arena's are) and its Locker.
func (w *world) process(id string) (steps.Locker, *recorder) {
	rdb := w.node.NewClient()
	rec := &recorder{}
	rdb.AddHook(rec)
	if h := w.node.Hook(); h != nil {
		rdb.AddHook(h)
	}
	w.t.Cleanup(func() { rdb.Close() })
	return lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: w.life, Now: time.Now,
		Go: func(f func(context.Context)) {
			w.wg.Add(1)
			go func() { defer w.wg.Done(); f(w.life) }()
		}}), rec
}

// TestLockWaitsForTheReplica: A's Lock is SET NX, then WAIT 1 for TTL/4; the replica has the
// write, so WAIT answers at once and A holds the lock. The primary then fails over: the promoted
// replica has A's lock (a second SET NX there finds it taken), and A's release finds it there.
func TestLockWaitsForTheReplica(t *testing.T) {
	bubble(t, func(t *testing.T) {
		w := newWorld(t)
		a, recA := w.process("buyer-1")
		ctx := context.Background()
		start := time.Now()
		if ok, err := a.Lock(ctx, key); err != nil || !ok {
			t.Fatalf("A's Lock = %v, %v; want true", ok, err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("A's Lock took %v with the replica in sync; want no wait", took)
		}
		got := recA.since(0)
		if len(got) != 2 || !strings.HasPrefix(got[0], "[set "+key+" ") || !strings.HasSuffix(got[0], " nx]") ||
			got[1] != fmt.Sprint([]any{"wait", 1, int(ttl / 4 / time.Millisecond)}) {
			t.Fatalf("A's Lock sent %q; want SET … NX PX, then WAIT 1 %d", got, ttl/4/time.Millisecond)
		}
		if err := w.node.Failover(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, err := w.node.Admin().SetNX(ctx, key, "buyer-2", ttl).Result(); ok || err != nil {
			t.Errorf("a second SET NX on the promoted replica = %v, %v; want false: it has A's lock", ok, err)
		}
		if err := a.Unlock(ctx, key); err != nil {
			t.Errorf("A's Unlock on the promoted replica = %v; want nil: the lock was there", err)
		}
	})
}

// TestNoReplicaNoLock: with the replica held back (it lags), A's SET NX lands on the primary
// alone; WAIT answers 0 after TTL/4, and A gives the key back and refuses (ErrNotReplicated).
// B, asking next, is refused the same way: while the replica lags, nobody gets the lock.
func TestNoReplicaNoLock(t *testing.T) {
	bubble(t, func(t *testing.T) {
		w := newWorld(t)
		w.node.HoldReplication()
		ctx := context.Background()
		for _, id := range []string{"buyer-1", "buyer-2"} {
			l, rec := w.process(id)
			from, start := rec.count(), time.Now()
			ok, err := l.Lock(ctx, key)
			if ok || !errors.Is(err, lock.ErrNotReplicated) {
				t.Fatalf("%s's Lock with the replica held back = %v, %v; want false, ErrNotReplicated", id, ok, err)
			}
			if took := time.Since(start); took != ttl/4 {
				t.Errorf("%s's refusal took %v; want TTL/4 (%v), WAIT's timeout", id, took, ttl/4)
			}
			if n, err := w.node.Admin().Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("after %s's refusal the lock key exists (%d, %v); want it given back", id, n, err)
			}
			if got := rec.since(from); len(got) < 3 || !strings.HasPrefix(got[1], "[wait ") || !strings.HasPrefix(got[2], "[evalsha ") {
				t.Errorf("%s's Lock sent %q; want SET, WAIT, then the script that gives the key back", id, got)
			}
			if err := l.Unlock(ctx, key); !errors.Is(err, steps.ErrNotOwner) {
				t.Errorf("%s's Unlock after the refusal = %v; want steps.ErrNotOwner: it holds nothing", id, err)
			}
		}
	})
}
