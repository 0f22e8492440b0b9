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
	lock "github.com/lockstep-lab/lockstep/steps/11_hash_owner"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: the owner is the request, carried in its context. A nested call of the same
// request re-enters (the hash counts 2); a second request of the same process, on the same Locker,
// is another owner and waits; a request that does not hold the lock cannot give it back.
//
// The test runs in a testing/synctest bubble: the server's TTLs, the watchdog and the waiter's
// pauses run on the bubble's fake clock, which moves only when every goroutine waits, and a round
// trip to the in-memory server takes no time on it.

// ttl is long beside the test's waits, so the holder's lease never comes near running out while
// the test looks.
const ttl = time.Second

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

func TestOwnerIsTheRequest(t *testing.T) {
	bubble(t, func(t *testing.T) {
		m, rdb := steptest.Mini(t)
		life, die := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() {
			die()
			wg.Wait()
		}()
		// One process, one Locker: both requests below are served by it.
		l := lock.New(steps.Proc{ID: "buyer-1", Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: life,
			Go: func(f func(context.Context)) {
				wg.Add(1)
				go func() { defer wg.Done(); f(life) }()
			}})
		key := "lock:product:1001"
		bg := context.Background()

		// holds reads the lock's hash: owner token → holds.
		holds := func() map[string]string {
			t.Helper()
			fields, _ := m.HKeys(key)
			h := map[string]string{}
			for _, f := range fields {
				h[f] = m.HGet(key, f)
			}
			return h
		}

		// The first request takes the lock, and its nested call takes it again.
		first := lock.WithRequest(bg)
		for i := 0; i < 2; i++ {
			if ok, err := l.Lock(first, key); err != nil || !ok {
				t.Fatalf("Lock #%d by the first request = %v, %v; want true", i+1, ok, err)
			}
		}
		h := holds()
		if len(h) != 1 {
			t.Fatalf("the lock's hash is %v; want one owner", h)
		}
		for owner, n := range h {
			if n != "2" {
				t.Fatalf("owner %s holds %s; want 2 after a nested Lock in the same request", owner, n)
			}
		}

		// A second request of the same process waits while the first holds the lock.
		second := lock.WithRequest(bg)
		type result struct {
			ok  bool
			err error
		}
		got := make(chan result, 1)
		go func() {
			ok, err := l.Lock(second, key)
			got <- result{ok, err}
		}()
		time.Sleep(ttl / 2) // a twentieth of its budget: it must still be waiting
		select {
		case r := <-got:
			t.Fatalf("the second request's Lock returned %v, %v while the first held the lock; want it to wait", r.ok, r.err)
		default:
		}

		// A request that does not hold the lock cannot give it back, and is told so.
		if err := l.Unlock(lock.WithRequest(bg), key); !errors.Is(err, steps.ErrNotOwner) {
			t.Errorf("Unlock by a request that holds nothing = %v; want steps.ErrNotOwner", err)
		}
		if err := l.Unlock(bg, key); !errors.Is(err, lock.ErrNoRequest) {
			t.Errorf("Unlock with no request in the context = %v; want lock.ErrNoRequest", err)
		}
		if now := holds(); len(now) != 1 || now[onlyKey(h)] != "2" {
			t.Fatalf("after the refused unlocks the lock's hash is %v; want %v untouched", now, h)
		}

		// The inner Unlock gives back one hold (nil, not "not yours"); the lock stays the first's.
		if err := l.Unlock(first, key); err != nil {
			t.Fatalf("inner Unlock = %v; want nil", err)
		}
		if now := holds(); now[onlyKey(h)] != "1" {
			t.Fatalf("after the inner Unlock the lock's hash is %v; want the first request holding 1", now)
		}
		select {
		case r := <-got:
			t.Fatalf("the second request's Lock returned %v, %v after an inner Unlock; want it still waiting", r.ok, r.err)
		default:
		}

		// The outer Unlock frees it, and the waiting request gets it within a pause (< TTL/2): its
		// next try, the round trips taking no time on the bubble's clock.
		if err := l.Unlock(first, key); err != nil {
			t.Fatalf("outer Unlock = %v; want nil", err)
		}
		select {
		case r := <-got:
			if r.err != nil || !r.ok {
				t.Fatalf("the second request's Lock = %v, %v; want true once the first let go", r.ok, r.err)
			}
		case <-time.After(ttl / 2):
			t.Fatal("the second request did not get the lock within a pause (TTL/2) of its release")
		}
		if now := holds(); len(now) != 1 || now[onlyKey(h)] != "" {
			t.Errorf("the lock's hash is %v; want the second request as its only owner", now)
		}
		if err := l.Unlock(second, key); err != nil {
			t.Errorf("the second request's Unlock = %v", err)
		}
		if m.Exists(key) {
			t.Errorf("the lock is still there after its last Unlock")
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
