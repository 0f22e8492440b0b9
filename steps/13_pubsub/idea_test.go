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
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/13_pubsub"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: a waiter sleeps on the unlock's PUBLISH, so it asks again the moment the lock
// is released, not when the holder's lease could have run out. Its flaw, shown too: the release
// wakes every waiter, and each of them asks.
//
// Each test runs in a testing/synctest bubble: the server, the clients, the waiters' timeouts and
// the lease guards all run on the bubble's fake clock, which moves only when every goroutine waits.
// A round trip to the in-memory server, and a message it publishes, take no time on it: a waiter
// woken by the release takes the lock at the very instant of the release, and synctest.Wait lets
// everything a step does at one instant settle before the test looks.

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
	m    *redisenv.Mini
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
func newArena(t *testing.T) *arena {
	t.Helper()
	m, _ := steptest.Mini(t)
	life, die := context.WithCancel(context.Background())
	a := &arena{t: t, m: m, life: life, wg: &sync.WaitGroup{}}
	t.Cleanup(func() {
		die()
		a.wg.Wait()
	})
	return a
}

// buyer is one process: a Locker on its own client, whose tries are counted.
func (a *arena) buyer(id string) buyer {
	rdb := redis.NewClient(a.m.Options())
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

// parked lets the bubble settle (synctest.Wait: every goroutine in it is blocked) and checks that
// the waiters are then subscribed to the release channel and each has sent both of its tries (the
// one before subscribing and the one after): they are asleep on the channel.
func parked(t *testing.T, a *arena, ws ...buyer) {
	t.Helper()
	synctest.Wait()
	if n := a.m.PubSubNumSub(key + ":released")[key+":released"]; n != len(ws) {
		t.Fatalf("%d subscribers on the release channel; want the %d waiters asleep on it", n, len(ws))
	}
	for i, w := range ws {
		if n := w.tries.n.Load(); n != 2 {
			t.Fatalf("waiter %d sent %d tries before it fell asleep; want 2: before subscribing, and after", i, n)
		}
	}
}

// The waiter gets the lock at the instant of the holder's Unlock on the bubble's clock (a round
// trip and a message take no time on it), though the holder's lease had more than a second left:
// the release woke it, not its timeout.
func TestReleaseWakesTheWaiter(t *testing.T) {
	bubble(t, func(t *testing.T) {
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
		t.Logf("the waiter held the lock %v after the release; the lease had %v left", after, left)
		if after != 0 {
			t.Errorf("the waiter got the lock %v after the release; want at its instant (the lease had %v left)", after, left)
		}
		if n := waiter.tries.n.Load(); n != 3 {
			t.Errorf("the waiter sent %d tries; want 3: before subscribing, after, and once on the release", n)
		}
		if err := waiter.l.Unlock(wctx, key); err != nil {
			t.Errorf("waiter's Unlock = %v", err)
		}
	})
}

// The herd: one release wakes every waiter, and every one of them asks; one wins, the others go
// back to sleep. Commands per acquisition grow with the number of waiters.
func TestReleaseWakesEveryWaiter(t *testing.T) {
	bubble(t, func(t *testing.T) {
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
	})
}

// next lets the bubble settle after a release (synctest.Wait: every goroutine in it is blocked,
// the clock not moved) and returns the index of the waiter whose Lock has answered, failing the
// test if none has, or if its answer is not true.
func next(t *testing.T, gots []chan result) int {
	t.Helper()
	synctest.Wait()
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
	t.Fatalf("no waiter got the lock at the instant of its release")
	return -1
}
