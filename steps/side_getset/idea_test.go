package lock_test

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/side_getset"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This road's idea: the lock's value is the time it expires, by the clock of the client that took
// it, and a client that finds that time past takes the lock over with GETSET. So whether a lock is
// still held is decided by the asking client's clock: one that runs 3 × TTL ahead takes over a
// lock that Redis still keeps; one with the right clock does not.
//
// The test runs in a testing/synctest bubble: the server's TTLs and every client's clock are the
// bubble's fake clock (the skewed ones run ahead of it), which moves only when every goroutine
// waits, so no load on the machine can make the holder's lease run out during the test.

const key = "lock:product:1001"

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

func TestClockAheadTakesOverAHeldLock(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = 2 * time.Second // nothing here waits: the whole test must run inside one lease
		m, _ := steptest.Mini(t)
		// client is one process whose wall clock runs ahead by skew.
		client := func(id string, skew time.Duration) steps.Locker {
			rdb := redis.NewClient(m.Options())
			t.Cleanup(func() { rdb.Close() })
			return lock.New(steps.Proc{ID: id, Redis: rdb, TTL: ttl, Now: func() time.Time { return time.Now().Add(skew) }})
		}
		ctx := context.Background()
		value := func() int64 {
			s, err := m.Get(key)
			if err != nil {
				t.Fatalf("the lock %s: %v", key, err)
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("the lock's value %q is not a time in ms: %v", s, err)
			}
			return n
		}

		holder := client("buyer-1", 0)
		if ok, err := holder.Lock(ctx, key); err != nil || !ok {
			t.Fatalf("the holder's Lock = %v, %v; want true", ok, err)
		}
		held := value()
		if m.TTL(key) <= 0 {
			t.Fatalf("the holder's lock has TTL %v; want the lease (EXPIRE after SETNX)", m.TTL(key))
		}

		// A client with the right clock reads the holder's time, finds it ahead, and is refused.
		if ok, err := client("buyer-2", 0).Lock(ctx, key); err != nil || ok {
			t.Errorf("a client with the right clock: Lock = %v, %v; want false while the holder's time is ahead", ok, err)
		}
		if v := value(); v != held {
			t.Errorf("after the refused Lock the lock's value is %d; want the holder's %d, untouched", v, held)
		}

		// A client whose clock runs 3 × TTL ahead finds the holder's time past and takes the lock over.
		if ok, err := client("buyer-3", 3*ttl).Lock(ctx, key); err != nil || !ok {
			t.Fatalf("a client 3 × TTL ahead: Lock = %v, %v; want true (GETSET over a lock it thinks has expired)", ok, err)
		}
		if left := m.TTL(key); left <= 0 {
			t.Errorf("after the takeover the lock has TTL %v; want a fresh lease", left)
		}
		now := time.Now().UnixMilli()
		if v := value(); v < now+3*ttl.Milliseconds() {
			t.Errorf("after the takeover the lock's value is %d ms, %d ms from now; want the taker's time, ≥ 3 TTL ahead",
				v, v-now)
		}
		t.Logf("the holder's lock said it expires %d ms from now; the taker's says %d ms", held-now, value()-now)
		if held <= now {
			t.Errorf("the holder's lock had already expired by the right clock (%d ms ago): the takeover proved nothing", now-held)
		}
	})
}
