package lock_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/13_pubsub"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: a waiter sleeps on the unlock's PUBLISH, so it asks again the moment the lock
// is released, not when the holder's lease could have run out. Its flaw, shown too: the release
// wakes every waiter, and each of them asks.

// ttl is long beside the test, so a waiter that woke by its timeout (the lease left, ≥ 2/3 TTL
// while the holder renews) could not pass for one woken by the release.
const ttl = 2 * time.Second

const key = "lock:product:1001"

// tries counts the runs of lock.lua a client sends (a NOSCRIPT answer, after which go-redis sends
// the script itself, is not a try; renew.lua and unlock.lua are not tries).
type tries struct{ n atomic.Int64 }

// lockLua is this step's lock.lua, and lockSHA its SHA-1, as EVAL and EVALSHA name it.
var lockLua, lockSHA = func() (string, string) {
	b, err := fs.ReadFile(lock.Source, "lock.lua")
	if err != nil {
		panic(err)
	}
	return string(b), fmt.Sprintf("%x", sha1.Sum(b))
}()

func (c *tries) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *tries) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if args := cmd.Args(); len(args) > 1 && (args[1] == lockSHA || args[1] == lockLua) &&
			(err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT")) {
			c.n.Add(1)
		}
		return err
	}
}
func (c *tries) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

type buyer struct {
	l     steps.Locker
	tries *tries
}

type arena struct {
	t    *testing.T
	m    *miniredis.Miniredis
	life context.Context
	wg   *sync.WaitGroup
}

func newArena(t *testing.T) *arena {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	m.ClockTTL(true)
	life, die := context.WithCancel(context.Background())
	a := &arena{t: t, m: m, life: life, wg: &sync.WaitGroup{}}
	t.Cleanup(func() {
		die()
		a.wg.Wait()
		m.Close()
		goleak.VerifyNone(t, leaks)
	})
	return a
}

// buyer is one process: a Locker on its own client, whose tries are counted.
func (a *arena) buyer(id string) buyer {
	rdb := redis.NewClient(&redis.Options{Addr: a.m.Addr()})
	n := &tries{}
	rdb.AddHook(n)
	a.t.Cleanup(func() { rdb.Close() })
	l := lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: a.life,
		Go: func(f func(context.Context)) {
			a.wg.Add(1)
			go func() { defer a.wg.Done(); f(a.life) }()
		}})
	return buyer{l, n}
}

type result struct {
	ok  bool
	err error
	at  time.Time
}

// wait starts b's Lock for a fresh request, and returns the request, a func that ends it, and
// where Lock's answer arrives.
func wait(b buyer) (context.Context, func(), chan result) {
	req, done := lock.WithRequest(context.Background())
	ctx, cancel := context.WithTimeout(req, 10*ttl)
	got := make(chan result, 1)
	go func() {
		ok, err := b.l.Lock(ctx, key)
		got <- result{ok, err, time.Now()}
	}()
	return ctx, func() { cancel(); done() }, got
}

// eventually polls cond every millisecond until it holds, or fails the test after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after %v: %s", d, what)
		}
	}
}

// parked waits until n waiters are subscribed to the release channel and each has sent both of
// its tries (the one before subscribing and the one after): they are asleep on the channel.
func parked(t *testing.T, a *arena, ws ...buyer) {
	t.Helper()
	eventually(t, ttl/2, "the waiters are not all subscribed and asleep", func() bool {
		if a.m.PubSubNumSub(key + ":released")[key+":released"] != len(ws) {
			return false
		}
		for _, w := range ws {
			if w.tries.n.Load() < 2 {
				return false
			}
		}
		return true
	})
}

// The waiter gets the lock within a few milliseconds of the holder's Unlock, though the holder's
// lease had more than a second left: the release woke it, not its timeout.
func TestReleaseWakesTheWaiter(t *testing.T) {
	a := newArena(t)
	holder, waiter := a.buyer("buyer-1"), a.buyer("buyer-2")
	held, done := lock.WithRequest(context.Background())
	defer done()
	if ok, err := holder.l.Lock(held, key); err != nil || !ok {
		t.Fatalf("holder's Lock = %v, %v", ok, err)
	}
	wctx, stop, got := wait(waiter)
	defer stop()
	parked(t, a, waiter)

	left := a.m.TTL(key)
	released := time.Now()
	if err := holder.l.Unlock(held, key); err != nil {
		t.Fatalf("holder's Unlock = %v", err)
	}
	r := <-got
	if r.err != nil || !r.ok {
		t.Fatalf("waiter's Lock = %v, %v; want true", r.ok, r.err)
	}
	after := r.at.Sub(released)
	t.Logf("the waiter held the lock %v after the release; the lease had %v left", after.Round(100*time.Microsecond), left.Round(time.Millisecond))
	if after > ttl/4 {
		t.Errorf("the waiter got the lock %v after the release; want within a few ms (the lease had %v left)", after, left)
	}
	if n := waiter.tries.n.Load(); n != 3 {
		t.Errorf("the waiter sent %d tries; want 3: before subscribing, after, and once on the release", n)
	}
	if err := waiter.l.Unlock(wctx, key); err != nil {
		t.Errorf("waiter's Unlock = %v", err)
	}
}

// The herd: one release wakes every waiter, and every one of them asks; one wins, the others go
// back to sleep. Commands per acquisition grow with the number of waiters.
func TestReleaseWakesEveryWaiter(t *testing.T) {
	a := newArena(t)
	holder := a.buyer("buyer-1")
	held, done := lock.WithRequest(context.Background())
	defer done()
	if ok, err := holder.l.Lock(held, key); err != nil || !ok {
		t.Fatalf("holder's Lock = %v, %v", ok, err)
	}
	var ws []buyer
	var gots []chan result
	var ctxs []context.Context
	for _, id := range []string{"buyer-2", "buyer-3", "buyer-4"} {
		w := a.buyer(id)
		ctx, stop, got := wait(w)
		defer stop()
		ws, gots, ctxs = append(ws, w), append(gots, got), append(ctxs, ctx)
	}
	parked(t, a, ws...)

	if err := holder.l.Unlock(held, key); err != nil {
		t.Fatalf("holder's Unlock = %v", err)
	}
	// Every waiter asks once more: 3 tries each. Only one of them gets the lock.
	eventually(t, ttl/4, "not every waiter asked again after the release", func() bool {
		for _, w := range ws {
			if w.tries.n.Load() < 3 {
				return false
			}
		}
		return true
	})
	winner := next(t, gots)
	post := int64(0)
	for i, w := range ws {
		n := w.tries.n.Load()
		post += n - 2
		if n != 3 {
			t.Errorf("waiter %d sent %d tries; want 3 (one release, one try each)", i, n)
		}
	}
	t.Logf("one release: %d waiters asked %d times for 1 acquisition", len(ws), post)

	// Let the line drain: each holder lets go, and the release wakes the rest.
	// (Ending the others' requests instead would not be quicker: a waiter asleep on the channel
	// does not notice its context end until its timeout, the holder's lease left.)
	for left := len(ws); ; {
		if err := ws[winner].l.Unlock(ctxs[winner], key); err != nil {
			t.Errorf("Unlock of waiter %d = %v", winner, err)
		}
		gots[winner] = nil
		if left--; left == 0 {
			break
		}
		winner = next(t, gots)
	}
}

// next returns the index of the waiter whose Lock answers next, failing the test if it is not true.
func next(t *testing.T, gots []chan result) int {
	t.Helper()
	for end := time.Now().Add(ttl / 4); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for i, got := range gots {
			select {
			case r := <-got: // a nil channel (a waiter done already) is never ready
				if r.err != nil || !r.ok {
					t.Fatalf("waiter %d's Lock = %v, %v; want true", i, r.ok, r.err)
				}
				return i
			default:
			}
		}
	}
	t.Fatalf("no waiter got the lock within %v of its release", ttl/4)
	return -1
}
