package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/12_lease_guard"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: the request's context ends, with cause ErrLeaseLost, as soon as its lock can
// no longer prove its lease — at the first renewal Redis refuses, or, when no renewal is answered,
// before the lease could have run out.
//
// Each test runs in a testing/synctest bubble: the server's TTLs, the lease guard's clock and the
// renewals' deadlines all run on the bubble's fake clock, which moves only when every goroutine
// waits. A round trip to the in-memory server takes no time on it, so the guard's moments are
// exact: a lease taken at 0 is renewed at TTL/3, and given up at TTL − TTL/10.

const key = "lock:product:1001"

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// holder starts a server and one process, whose every command takes rtt on the bubble's clock,
// takes the lock for a fresh request and returns the request's context. Call it inside the bubble.
func holder(t *testing.T, ttl, rtt time.Duration) (*redisenv.Mini, steps.Locker, context.Context, time.Time) {
	t.Helper()
	m, rdb := steptest.Mini(t)
	if rtt > 0 {
		rdb.AddHook(roundTrip(rtt))
	}
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
	})
	asked := time.Now()
	if ok, err := l.Lock(req, key); err != nil || !ok {
		t.Fatalf("Lock = %v, %v; want true", ok, err)
	}
	return m, l, req, asked
}

// roundTrip is a go-redis hook that makes each command wait its duration (or until its context
// ends) before it is sent: a round trip, which on the bubble's clock otherwise takes no time.
type roundTrip time.Duration

func (d roundTrip) DialHook(next redis.DialHook) redis.DialHook { return next }
func (d roundTrip) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t := time.NewTimer(time.Duration(d))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		return next(ctx, cmd)
	}
}
func (d roundTrip) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A lock deleted, or taken by another owner, behind the holder's back: the next renewal (every
// TTL/3) is refused, and the request's context ends at once with ErrLeaseLost.
func TestLeaseRefusedEndsTheRequest(t *testing.T) {
	const ttl = 900 * time.Millisecond
	for _, tc := range []struct {
		name  string
		steal func(m *redisenv.Mini)
	}{
		{"deleted", func(m *redisenv.Mini) { m.Del(key) }},
		{"taken", func(m *redisenv.Mini) {
			m.Del(key)
			m.HSet(key, "another-request", "1")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				m, _, req, _ := holder(t, ttl, 0)
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
				// The refusal comes at the next renewal, ≤ TTL/3 away. Had the guard only waited for
				// its deadline (0.9 TTL after the last renewal it saw answered), it would be ≥ 0.57 TTL.
				t.Logf("the request ended %v after its lock was %s", after, tc.name)
				if after > ttl/3 {
					t.Errorf("the request ended %v after its lock was %s; want at the next renewal, at most TTL/3 = %v later", after, tc.name, ttl/3)
				}
			})
		})
	}
}

// Renewals that cannot be answered: the request ends before the lease it was granted could have
// run out in Redis — no earlier than 0.9 TTL after it asked for the lock (the guard's margin is
// TTL/10), and while the holder's lock is still in Redis.
func TestLeaseUnansweredEndsTheRequestBeforeItExpires(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = time.Second
		// Each refusal takes a round trip of 1 ms. Answered in no time, the guard's renewals, each
		// sent again at half the time the lease has left, would come ever closer to the end of the
		// lease without the clock ever getting there.
		m, _, req, asked := holder(t, ttl, time.Millisecond)
		m.SetError("ERR the lock server is out of reach") // every renewal from now on fails
		stillHeld := make(chan bool, 1)
		stop := context.AfterFunc(req, func() { stillHeld <- m.Exists(key) })
		defer stop()
		select {
		case held := <-stillHeld:
			ended := time.Since(asked)
			t.Logf("the request ended %v after it asked for the lock (lease %v)", ended, ttl)
			if cause := context.Cause(req); !errors.Is(cause, lock.ErrLeaseLost) {
				t.Errorf("the request ended with cause %v; want ErrLeaseLost", cause)
			}
			if ended < ttl-ttl/10 {
				t.Errorf("the request ended %v after it asked: before its lease was even in doubt (0.9 TTL = %v)", ended, ttl-ttl/10)
			}
			// The lease is counted from the moment the winning try was sent, the moment it asked: the
			// guard's deadline, its margin before the lease's end, is 0.9 TTL after that.
			if ended > ttl-ttl/10 {
				t.Errorf("the request ended %v after it asked: past the guard's deadline (0.9 TTL = %v)", ended, ttl-ttl/10)
			}
			if !held {
				t.Errorf("the lock had already expired in Redis when the request was stopped: another could have been inside")
			}
		case <-time.After(5 * ttl):
			t.Fatal("the request's context did not end within 5 TTL although no renewal was answered")
		}
	})
}
