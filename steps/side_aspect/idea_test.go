package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/side_aspect"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This road's idea: 002's @RedisLock around-advice as WithLock(ctx, locker, key, fn). It takes the
// lock with the annotation's 30 tries, keeps the request's id for the key in a map that rides in
// the context (a nested WithLock re-enters with it), runs fn, and gives the lock back on the
// normal path only: an error from fn leaves the lock taken, and the watchdog keeps it so.
//
// The test runs in a testing/synctest bubble: the server's TTLs, the watchdog and the waiters'
// pauses run on the bubble's fake clock, which moves only when every goroutine waits, and a round
// trip to the in-memory server takes no time on it.

const key = "lock:product:1001"

const ttl = time.Second

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// tries counts the lock.lua runs (EVALSHA) its client sends.
type tries struct {
	mu sync.Mutex
	n  int
}

func (c *tries) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *tries) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (c *tries) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *tries) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestWithLockLeavesTheLockOnAnError(t *testing.T) {
	bubble(t, func(t *testing.T) {
		m, _ := steptest.Mini(t)
		life, die := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() {
			die()
			wg.Wait()
		}()
		process := func(id string) (steps.Locker, *tries) {
			rdb := redis.NewClient(m.Options())
			t.Cleanup(func() { rdb.Close() })
			c := &tries{}
			rdb.AddHook(c)
			return lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: life,
				Go: func(f func(context.Context)) {
					wg.Add(1)
					go func() { defer wg.Done(); f(life) }()
				}}), c
		}
		holds := func() map[string]string {
			fields, _ := m.HKeys(key)
			h := map[string]string{}
			for _, f := range fields {
				h[f] = m.HGet(key, f)
			}
			return h
		}
		bg := context.Background()
		a, _ := process("buyer-1")
		b, bTries := process("buyer-2")

		// The normal path: fn returns nil, and the lock is given back.
		if err := lock.WithLock(bg, a, key, func(context.Context) error {
			if h := holds(); len(h) != 1 {
				t.Errorf("inside fn the lock's hash is %v; want one request holding it", h)
			}
			return nil
		}); err != nil {
			t.Fatalf("WithLock with fn returning nil = %v", err)
		}
		if m.Exists(key) {
			t.Fatal("the lock is still there after fn returned nil")
		}

		// A nested WithLock in the same request re-enters under the request's id: 2 holds inside,
		// 1 after the inner call, none after the outer.
		if err := lock.WithLock(bg, a, key, func(ctx context.Context) error {
			return lock.WithLock(ctx, a, key, func(context.Context) error {
				if h := holds(); len(h) != 1 || h[onlyKey(h)] != "2" {
					t.Errorf("inside the nested call the lock's hash is %v; want one request holding 2", h)
				}
				return nil
			})
		}); err != nil {
			t.Fatalf("nested WithLock = %v", err)
		}
		if m.Exists(key) {
			t.Fatal("the lock is still there after the outer call returned nil")
		}

		// An error: WithLock returns it and leaves the lock taken. The watchdog renews it: three
		// leases later it is still there, held by the request that ended.
		failed := errors.New("the work failed")
		if err := lock.WithLock(bg, a, key, func(context.Context) error { return failed }); !errors.Is(err, failed) {
			t.Fatalf("WithLock with fn failing = %v; want fn's error", err)
		}
		left := holds()
		if len(left) != 1 {
			t.Fatalf("after fn's error the lock's hash is %v; want the ended request still holding it", left)
		}
		time.Sleep(3 * ttl)
		if h := holds(); len(h) != 1 || h[onlyKey(left)] != "1" {
			t.Fatalf("three leases after fn's error the lock's hash is %v; want %v, renewed by the watchdog", h, left)
		}

		// Another request is refused after 002's 30 tries, about 0.3 × TTL, with ErrLockFailed
		// (002's RedisLockFailException), and its fn never runs.
		start, before := time.Now(), bTries.count()
		err := lock.WithLock(bg, b, key, func(context.Context) error {
			t.Error("fn ran though the lock is held by another request")
			return nil
		})
		if !errors.Is(err, lock.ErrLockFailed) {
			t.Fatalf("WithLock while another request holds the lock = %v; want lock.ErrLockFailed", err)
		}
		if n := bTries.count() - before; n != 30 {
			t.Errorf("the refused request tried %d times; want the annotation's 30", n)
		}
		if d := time.Since(start); d < 30*ttl/100 || d > 30*(ttl/100+ttl/1000) {
			t.Errorf("the refused request gave up after %v; want 30 pauses of TTL/100 plus up to TTL/1000 (%v–%v)",
				d, 30*ttl/100, 30*(ttl/100+ttl/1000))
		}
	})
}

// TestNestedWithLockGoesOnRefused is 002's "re-entered" taken at its word: a nested call finds the
// request's id in the map, asks for the lock again under it, and runs its fn whatever the answer.
// Here the outer call's lock is gone and another request holds it: the nested Lock is refused
// after its 30 tries, and the nested fn runs all the same, without the lock; neither call reports
// anything (their unlocks find the lock another's, which 002 only logs).
func TestNestedWithLockGoesOnRefused(t *testing.T) {
	bubble(t, func(t *testing.T) {
		m, _ := steptest.Mini(t)
		life, die := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() {
			die()
			wg.Wait()
		}()
		process := func(id string) steps.Locker {
			rdb := redis.NewClient(m.Options())
			t.Cleanup(func() { rdb.Close() })
			return lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: life,
				Go: func(f func(context.Context)) {
					wg.Add(1)
					go func() { defer wg.Done(); f(life) }()
				}})
		}
		bg := context.Background()
		a, b := process("buyer-1"), process("buyer-2")
		other := lock.WithRequest(bg)
		ran := false
		err := lock.WithLock(bg, a, key, func(ctx context.Context) error {
			// The outer call's lock is lost (its lease ran out, say) and another request takes it.
			m.Del(key)
			if ok, err := b.Lock(other, key); err != nil || !ok {
				t.Fatalf("the other request's Lock = %v, %v; want true", ok, err)
			}
			return lock.WithLock(ctx, a, key, func(context.Context) error {
				ran = true
				return nil
			})
		})
		if err != nil {
			t.Errorf("the outer WithLock = %v; want nil, as 002's aspect reports nothing", err)
		}
		if !ran {
			t.Fatal("the nested fn did not run; 002's aspect runs it whatever its lockAndRetry answered")
		}
		fields, _ := m.HKeys(key)
		if len(fields) != 1 {
			t.Fatalf("the lock's hash is %v; want the other request still holding it", fields)
		}
		if err := b.Unlock(other, key); err != nil {
			t.Errorf("the other request's Unlock = %v", err)
		}
	})
}

// onlyKey returns the one key of a one-entry map.
func onlyKey(h map[string]string) string {
	for k := range h {
		return k
	}
	return ""
}
