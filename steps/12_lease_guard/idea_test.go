package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/12_lease_guard"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: the request's context ends, with cause ErrLeaseLost, as soon as its lock can
// no longer prove its lease — at the first renewal Redis refuses, or, when no renewal is answered,
// before the lease could have run out.

const key = "lock:product:1001"

// holder starts a server and one process, takes the lock for a fresh request and returns the
// request's context.
func holder(t *testing.T, ttl time.Duration) (*miniredis.Miniredis, steps.Locker, context.Context, time.Time) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	m.ClockTTL(true)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	life, die := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	l := lock.New(steps.Proc{ID: "buyer-1", Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: life,
		Go: func(f func(context.Context)) {
			wg.Add(1)
			go func() { defer wg.Done(); f(life) }()
		}})
	req, done := lock.WithRequest(context.Background())
	t.Cleanup(func() {
		m.SetError("")
		l.Unlock(context.WithoutCancel(req), key) // stops the guard's timers, whatever it answers
		done()
		die()
		wg.Wait()
		rdb.Close()
		m.Close()
		goleak.VerifyNone(t, leaks)
	})
	asked := time.Now()
	if ok, err := l.Lock(req, key); err != nil || !ok {
		t.Fatalf("Lock = %v, %v; want true", ok, err)
	}
	return m, l, req, asked
}

// A lock deleted, or taken by another owner, behind the holder's back: the next renewal (every
// TTL/3) is refused, and the request's context ends at once with ErrLeaseLost.
func TestLeaseRefusedEndsTheRequest(t *testing.T) {
	const ttl = 900 * time.Millisecond
	for _, tc := range []struct {
		name  string
		steal func(m *miniredis.Miniredis)
	}{
		{"deleted", func(m *miniredis.Miniredis) { m.Del(key) }},
		{"taken", func(m *miniredis.Miniredis) {
			m.Del(key)
			m.HSet(key, "another-request", "1")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, req, _ := holder(t, ttl)
			if req.Err() != nil {
				t.Fatalf("the request ended before anything happened: %v", context.Cause(req))
			}
			stolen := time.Now()
			tc.steal(m)
			select {
			case <-req.Done():
			case <-time.After(5 * ttl):
				t.Fatal("the request's context did not end within 5 TTL of losing its lock")
			}
			after := time.Since(stolen)
			if cause := context.Cause(req); !errors.Is(cause, lock.ErrLeaseLost) {
				t.Errorf("the request ended with cause %v; want ErrLeaseLost", cause)
			}
			// The refusal comes at the next renewal, ≤ TTL/3 away. Had the guard only waited for its
			// deadline (0.9 TTL after the last renewal it saw answered), it would be ≥ 0.57 TTL.
			t.Logf("the request ended %v after its lock was %s", after.Round(time.Millisecond), tc.name)
			if after > ttl/2 {
				t.Errorf("the request ended %v after its lock was %s; want about a renewal period (TTL/3 = %v)", after, tc.name, ttl/3)
			}
		})
	}
}

// Renewals that cannot be answered: the request ends before the lease it was granted could have
// run out in Redis — no earlier than 0.9 TTL after it asked for the lock (the guard's margin is
// TTL/10), and while the holder's lock is still in Redis.
func TestLeaseUnansweredEndsTheRequestBeforeItExpires(t *testing.T) {
	const ttl = time.Second
	m, _, req, asked := holder(t, ttl)
	m.SetError("ERR the lock server is out of reach") // every renewal from now on fails
	stillHeld := make(chan bool, 1)
	stop := context.AfterFunc(req, func() { stillHeld <- m.Exists(key) })
	defer stop()
	select {
	case held := <-stillHeld:
		ended := time.Since(asked)
		t.Logf("the request ended %v after it asked for the lock (lease %v)", ended.Round(time.Millisecond), ttl)
		if cause := context.Cause(req); !errors.Is(cause, lock.ErrLeaseLost) {
			t.Errorf("the request ended with cause %v; want ErrLeaseLost", cause)
		}
		if ended < ttl-ttl/10 {
			t.Errorf("the request ended %v after it asked: before its lease was even in doubt (0.9 TTL = %v)", ended, ttl-ttl/10)
		}
		if !held {
			t.Errorf("the lock had already expired in Redis when the request was stopped: another could have been inside")
		}
	case <-time.After(5 * ttl):
		t.Fatal("the request's context did not end within 5 TTL although no renewal was answered")
	}
}
