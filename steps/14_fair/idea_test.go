package lock_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/14_fair"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: waiters queue in Redis in the order they asked and get the lock in that order;
// a waiter that stops asking is dropped from the line after its deadline (2 × TTL after it last
// asked), so it cannot block the line for ever.
//
// Each test runs in a testing/synctest bubble: the server (its TTLs and its TIME), the clients,
// the waiters' timeouts and the lease guards all run on the bubble's fake clock, which moves only
// when every goroutine waits. A round trip to the in-memory server, and a message it publishes,
// take no time on it, and synctest.Wait lets everything the processes do at one instant settle
// before the test looks.

const (
	key  = "lock:product:1001"
	line = key + ":line"    // the list of waiting requests, first come first
	by   = key + ":line:by" // each waiter's deadline, ms on Redis's clock
	turn = "lock:turn:*"    // the turn channels, one a process: lock:turn:<process id>
)

type arena struct {
	t    *testing.T
	m    *redisenv.Mini
	ttl  time.Duration
	life context.Context
	wg   *sync.WaitGroup
}

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// newArena starts a server, closed when the test ends. Call it inside the bubble.
func newArena(t *testing.T, ttl time.Duration) *arena {
	t.Helper()
	m, _ := steptest.Mini(t)
	life, die := context.WithCancel(context.Background())
	a := &arena{t: t, m: m, ttl: ttl, life: life, wg: &sync.WaitGroup{}}
	t.Cleanup(func() {
		die()
		a.wg.Wait()
	})
	return a
}

// buyer is one process: a Locker on its own client.
func (a *arena) buyer(id string) steps.Locker {
	rdb := redis.NewClient(a.m.Options())
	a.t.Cleanup(func() { rdb.Close() })
	return lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: a.ttl,
		Ctx: a.life,
		Go: func(f func(context.Context)) {
			a.wg.Add(1)
			go func() { defer a.wg.Done(); f(a.life) }()
		}})
}

// inLine is how many requests wait in the line.
func (a *arena) inLine() int {
	l, _ := a.m.List(line)
	return len(l)
}

// settled lets the bubble settle (synctest.Wait: every goroutine in it is blocked, the clock not
// moved) and fails the test unless cond then holds.
func settled(t *testing.T, what string, cond func() bool) {
	t.Helper()
	synctest.Wait()
	if !cond() {
		t.Fatal(what)
	}
}

// Three waiters join the line one after the other while the lock is held; after the release they
// get it in the order they asked, each as the one before lets go.
func TestWaitersGetTheLockInTheOrderTheyAsked(t *testing.T) {
	bubble(t, func(t *testing.T) {
		// Each waiter asks again at least once a lease: far inside its 2 × TTL deadline.
		const ttl = time.Second
		a := newArena(t, ttl)
		holder := a.buyer("buyer-0")
		held, done := lock.WithRequest(context.Background())
		defer done()
		if ok, err := holder.Lock(held, key); err != nil || !ok {
			t.Fatalf("holder's Lock = %v, %v", ok, err)
		}

		var mu sync.Mutex
		var order []string
		var wg sync.WaitGroup
		defer wg.Wait()
		for i, id := range []string{"buyer-1", "buyer-2", "buyer-3"} {
			w := a.buyer(id)
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, done := lock.WithRequest(context.Background())
				defer done()
				ctx, cancel := context.WithTimeout(req, 10*ttl)
				defer cancel()
				ok, err := w.Lock(ctx, key)
				if err != nil || !ok {
					t.Errorf("%s's Lock = %v, %v; want true", id, ok, err)
					return
				}
				mu.Lock()
				order = append(order, id) // one holder at a time: this is the order of acquisition
				mu.Unlock()
				if err := w.Unlock(ctx, key); err != nil {
					t.Errorf("%s's Unlock = %v", id, err)
				}
			}()
			// The next one asks only once this one is in line: the order they asked is known.
			settled(t, id+" did not join the line", func() bool { return a.inLine() == i+1 })
		}
		if err := holder.Unlock(held, key); err != nil {
			t.Fatalf("holder's Unlock = %v", err)
		}
		wg.Wait()
		want := []string{"buyer-1", "buyer-2", "buyer-3"}
		if !slices.Equal(order, want) {
			t.Errorf("the waiters got the lock in the order %v; want %v, the order they asked",
				order, want)
		}
		if n := a.inLine(); n != 0 || a.m.Exists(by) || a.m.Exists(key) {
			t.Errorf("after the last Unlock: %d in line, deadlines kept: %v, lock kept: %v; "+
				"want all gone", n, a.m.Exists(by), a.m.Exists(key))
		}
	})
}

// A waiter that stopped asking (a process that died in line) is first in line, and the lock is
// free. The next waiter does not wait for it for ever: it gets the lock once the dead waiter's
// deadline has passed on Redis's clock (which is the bubble's), and the dead one is gone from the
// line.
func TestDeadWaiterIsDroppedAfterItsDeadline(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		a := newArena(t, ttl)
		deadline := time.Now().Add(2 * ttl).UnixMilli() // as lock.lua sets it: 2 × TTL after asking
		a.m.RPush(line, "dead-request")
		a.m.ZAdd(by, float64(deadline), "dead-request")

		w := a.buyer("buyer-1")
		req, done := lock.WithRequest(context.Background())
		defer done()
		ctx, cancel := context.WithTimeout(req, 10*ttl)
		defer cancel()
		start := time.Now()
		ok, err := w.Lock(ctx, key)
		got := time.Now()
		if err != nil || !ok {
			t.Fatalf("Lock = %v, %v; want true once the dead waiter is dropped", ok, err)
		}
		defer func() {
			if err := w.Unlock(ctx, key); err != nil {
				t.Errorf("Unlock = %v", err)
			}
		}()
		t.Logf("got the lock %v after asking; the dead waiter's deadline was %v after",
			got.Sub(start), time.UnixMilli(deadline).Sub(start))
		if got.UnixMilli() < deadline {
			t.Errorf("got the lock at %d ms, before the dead waiter's deadline (%d ms): "+
				"it jumped the line", got.UnixMilli(), deadline)
		}
		// lock.lua tells the waiter to wait until the dead one's deadline, in ms of Redis's clock;
		// the round trips take no time on the bubble's clock.
		if late := got.Sub(time.UnixMilli(deadline)); late >= time.Millisecond {
			t.Errorf("got the lock %v after the dead waiter's deadline; want at once "+
				"(< 1 ms, Redis's clock counting in ms)", late)
		}
		if l, _ := a.m.List(line); len(l) != 0 {
			t.Errorf("the line is %v; want empty (the dead waiter dropped, the live one holding "+
				"the lock)", l)
		}
		if s, err := a.m.ZScore(by, "dead-request"); err == nil {
			t.Errorf("the dead waiter's deadline is still kept (%v)", s)
		}
	})
}

// A process is told its turns on one subscription, opened the first time one of its requests
// waits and kept for the next: three waits one after the other, and Redis counts one subscriber,
// on its process's one channel. The release wakes the waiter at once, not after a lease: at the
// instant of the release on the bubble's clock, where a round trip and a message take no time.
func TestOneSubscriptionPerProcess(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = 2 * time.Second // a wake-up that missed its message would take up to a lease
		a := newArena(t, ttl)
		holder, waiter := a.buyer("buyer-0"), a.buyer("buyer-1")
		for wait := 1; wait <= 3; wait++ {
			held, hdone := lock.WithRequest(context.Background())
			if ok, err := holder.Lock(held, key); err != nil || !ok {
				t.Fatalf("wait %d: holder's Lock = %v, %v", wait, ok, err)
			}
			var at time.Time // when the waiter got the lock; zero if it did not
			over := make(chan struct{})
			go func() {
				defer close(over) // after its Unlock: the holder's next Lock finds the lock free
				req, done := lock.WithRequest(context.Background())
				defer done()
				if ok, err := waiter.Lock(req, key); err != nil || !ok {
					t.Errorf("wait %d: waiter's Lock = %v, %v", wait, ok, err)
					return
				}
				at = time.Now()
				if err := waiter.Unlock(req, key); err != nil {
					t.Errorf("wait %d: waiter's Unlock = %v", wait, err)
				}
			}()
			settled(t, "the waiter did not join the line", func() bool { return a.inLine() == 1 })
			settled(t, "the waiter's process did not subscribe", func() bool {
				return len(a.m.PubSubChannels(turn)) == 1
			})
			released := time.Now()
			if err := holder.Unlock(held, key); err != nil {
				t.Fatalf("wait %d: holder's Unlock = %v", wait, err)
			}
			hdone()
			<-over
			if at.IsZero() {
				return
			}
			if d := at.Sub(released); d != 0 {
				t.Errorf("wait %d: the waiter got the lock %v after the release; want at its "+
					"instant (told on its channel)", wait, d)
			}
			chans := a.m.PubSubChannels(turn)
			if n := a.m.PubSubNumSub(chans...); len(chans) != 1 || n[chans[0]] != 1 {
				t.Errorf("wait %d: turn channels %v with subscribers %v; "+
					"want one channel, one subscriber", wait, chans, n)
			}
		}
	})
}

// Two requests of one process hold two locks at once, for three leases: the process's one clock
// renews both, and neither request's context ends. Given back, the locks are gone at once.
func TestOneClockRenewsEveryLeaseOfAProcess(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		a := newArena(t, ttl)
		b := a.buyer("buyer-0")
		keys := []string{key, "lock:product:1002"}
		var reqs []context.Context
		for _, k := range keys {
			req, done := lock.WithRequest(context.Background())
			defer done()
			if ok, err := b.Lock(req, k); err != nil || !ok {
				t.Fatalf("Lock(%s) = %v, %v", k, ok, err)
			}
			reqs = append(reqs, req)
		}
		time.Sleep(3 * ttl)
		for i, k := range keys {
			if !a.m.Exists(k) {
				t.Errorf("after 3 leases, %s is gone: its lease was not renewed", k)
			}
			if err := context.Cause(reqs[i]); err != nil {
				t.Errorf("after 3 leases, the request holding %s ended: %v", k, err)
			}
			if err := b.Unlock(reqs[i], k); err != nil {
				t.Errorf("Unlock(%s) = %v", k, err)
			}
			if a.m.Exists(k) {
				t.Errorf("after its Unlock, %s is still held", k)
			}
		}
	})
}
