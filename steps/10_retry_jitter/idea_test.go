package lock_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/10_retry_jitter"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: a waiter pauses TTL/4 plus up to TTL/4 between tries, and gives up after 10
// leases. The lock here is held by a key the test sets itself, with no expiry, so nothing but the
// test decides when it comes free.

const ttl = 100 * time.Millisecond

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
func waiter(t *testing.T, m *miniredis.Miniredis) (steps.Locker, *setNXCounter) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
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

func server(t *testing.T) *miniredis.Miniredis {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	m.ClockTTL(true)
	t.Cleanup(func() {
		m.Close()
		goleak.VerifyNone(t, leaks)
	})
	return m
}

// A waiter asks once per pause, not once per round trip: while another holds the lock for 2 × TTL
// it sends a handful of SET NX, where step 09's spinner sends one per round trip (thousands).
func TestWaiterPausesBetweenTries(t *testing.T) {
	m := server(t)
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
	if r := <-got; r.err != nil || !r.ok {
		t.Fatalf("Lock = %v, %v; want true once the lock is free", r.ok, r.err)
	}
	waited := time.Since(start)
	defer l.Unlock(context.Background(), key)

	// Every pause is at least TTL/4, so in `waited` there is room for at most waited/(TTL/4) + 1
	// tries, however slowly the machine runs.
	tries := cnt.n.Load()
	limit := int64(waited/(ttl/4)) + 1
	t.Logf("waited %v, %d tries (at most %d possible with pauses ≥ TTL/4)", waited.Round(time.Millisecond), tries, limit)
	if tries < 2 {
		t.Errorf("%d tries: the waiter should have tried, paused and tried again", tries)
	}
	if tries > limit {
		t.Errorf("%d tries in %v: more than one per TTL/4 pause (at most %d)", tries, waited, limit)
	}
}

// A waiter gives up after its budget of 10 leases: Lock answers false, and the other's lock is
// left alone.
func TestWaiterGivesUpAfterBudget(t *testing.T) {
	m := server(t)
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
	t.Logf("gave up after %v and %d tries", waited.Round(time.Millisecond), cnt.n.Load())
	if waited < budget {
		t.Errorf("gave up after %v, before its budget of %v", waited, budget)
	}
	// It stops at the first try after the budget: one more pause (≤ TTL/2) and a round trip.
	// Give the machine a whole budget more of slack; an unbounded retry would not stop at all.
	if waited > 2*budget {
		t.Errorf("gave up after %v: far past its budget of %v", waited, budget)
	}
	if tries, limit := cnt.n.Load(), int64(waited/(ttl/4))+1; tries > limit {
		t.Errorf("%d tries in %v: more than one per TTL/4 pause (at most %d)", tries, waited, limit)
	}
	if v, _ := m.Get(key); v != "another-process" {
		t.Errorf("the other's lock is %q now; the waiter must leave it alone", v)
	}
}
