package lock_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/10_retry_jitter"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: a waiter pauses TTL/4 plus up to TTL/4 between tries, and gives up after 10
// leases. The lock here is held by a key the test sets itself, with no expiry, so nothing but the
// test decides when it comes free.
//
// Each test runs in a testing/synctest bubble: the server, the client and the waiter's pauses all
// run on the bubble's fake clock, which moves only when every goroutine waits. A round trip to the
// in-memory server takes no time on it, so the times measured below are the pauses and nothing
// else, however loaded the machine.

const ttl = 100 * time.Millisecond

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// setNXCounter counts the SET commands a client sends: one per try of this step's Lock.
type setNXCounter struct{ n atomic.Int64 }

func (c *setNXCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *setNXCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "set") {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (c *setNXCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// waiter builds one process: a Locker on its own counted client, whose goroutines stop with the test.
func waiter(t *testing.T, m *redisenv.Mini) (steps.Locker, *setNXCounter) {
	t.Helper()
	rdb := redis.NewClient(m.Options())
	cnt := &setNXCounter{}
	rdb.AddHook(cnt)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		rdb.Close()
	})
	l := lock.New(steps.Proc{ID: "buyer-1", Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: ctx,
		Go: func(f func(context.Context)) {
			wg.Add(1)
			go func() { defer wg.Done(); f(ctx) }()
		}})
	return l, cnt
}

// checkPace fails the test unless tries were sent one per pause over waited: every pause is at
// least TTL/4, so there is room for at most waited/(TTL/4) + 1 tries; and less than TTL/2, so
// the waiter sent at least waited/(TTL/2) + 1 (the round trips take no time on the bubble's clock).
func checkPace(t *testing.T, tries int64, waited time.Duration) {
	t.Helper()
	most, least := int64(waited/(ttl/4))+1, int64(waited/(ttl/2))+1
	t.Logf("waited %v, %d tries (between %d and %d possible with pauses of TTL/4 to TTL/2)", waited, tries, least, most)
	if tries < 2 {
		t.Errorf("%d tries: the waiter should have tried, paused and tried again", tries)
	}
	if tries > most {
		t.Errorf("%d tries in %v: more than one per TTL/4 pause (at most %d)", tries, waited, most)
	}
	if tries < least {
		t.Errorf("%d tries in %v: fewer than one per TTL/2 pause (at least %d): the waiter slept longer than its pause", tries, waited, least)
	}
}

// A waiter asks once per pause, not once per round trip: while another holds the lock for 2 × TTL
// it sends a handful of SET NX, where step 09's spinner sends one per round trip (thousands).
func TestWaiterPausesBetweenTries(t *testing.T) {
	bubble(t, func(t *testing.T) {
		m, _ := steptest.Mini(t)
		key := "lock:product:1001"
		m.Set(key, "another-process") // held, with no expiry: only the test frees it
		l, cnt := waiter(t, m)

		start := time.Now()
		type result struct {
			ok  bool
			err error
		}
		got := make(chan result, 1)
		go func() {
			ok, err := l.Lock(context.Background(), key)
			got <- result{ok, err}
		}()
		time.Sleep(2 * ttl) // a fifth of the waiter's budget: it is still trying when the lock frees
		m.Del(key)
		r := <-got
		if r.err != nil || !r.ok {
			t.Fatalf("Lock = %v, %v; want true once the lock is free", r.ok, r.err)
		}
		waited := time.Since(start)
		defer l.Unlock(context.Background(), key)

		checkPace(t, cnt.n.Load(), waited)
		// The lock came free at 2 × TTL: the waiter takes it at its first try after that, less
		// than a pause later.
		if waited < 2*ttl || waited >= 2*ttl+ttl/2 {
			t.Errorf("the waiter got the lock %v after it asked; want within a pause (< TTL/2) of its release at %v", waited, 2*ttl)
		}
	})
}

// A waiter gives up after its budget of 10 leases: Lock answers false, and the other's lock is
// left alone.
func TestWaiterGivesUpAfterBudget(t *testing.T) {
	bubble(t, func(t *testing.T) {
		m, _ := steptest.Mini(t)
		key := "lock:product:1001"
		m.Set(key, "another-process")
		l, cnt := waiter(t, m)

		start := time.Now()
		ok, err := l.Lock(context.Background(), key)
		waited := time.Since(start)
		if err != nil || ok {
			t.Fatalf("Lock = %v, %v; want false, nil after the budget", ok, err)
		}
		budget := 10 * ttl
		t.Logf("gave up after %v and %d tries", waited, cnt.n.Load())
		if waited < budget {
			t.Errorf("gave up after %v, before its budget of %v", waited, budget)
		}
		// It stops at the first try after the budget: one more pause (< TTL/2), and the round
		// trips take no time on the bubble's clock. An unbounded retry would not stop at all.
		if waited >= budget+ttl/2 {
			t.Errorf("gave up after %v: past its budget of %v and one more pause (< TTL/2)", waited, budget)
		}
		checkPace(t, cnt.n.Load(), waited)
		if v, _ := m.Get(key); v != "another-process" {
			t.Errorf("the other's lock is %q now; the waiter must leave it alone", v)
		}
	})
}
