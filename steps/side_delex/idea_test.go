package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/side_delex"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This road's idea: the release is one command the server knows, DELEX key IFEQ token, instead of
// step 09's Lua script. It deletes the lock only while it holds the caller's token; and its 0
// says only "deleted nothing": a lock another process took and a lock that is simply gone get the
// same answer.
//
// The test runs in a testing/synctest bubble on an embedded miniredis (v2.40 runs DELEX … IFEQ;
// redis-server 7.0 does not, and there this road's suite is skipped with that reason). A lease
// that "runs out" is a key the test deletes, so no watchdog can race it.

const key = "lock:product:1001"

// ttl is long beside the test: no lease runs out by itself while it looks.
const ttl = time.Second

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// recorder remembers every command its client sends, as the server receives it.
type recorder struct {
	mu   sync.Mutex
	cmds [][]any
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		r.cmds = append(r.cmds, cmd.Args())
		r.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.mu.Lock()
		for _, c := range cmds {
			r.cmds = append(r.cmds, c.Args())
		}
		r.mu.Unlock()
		return next(ctx, cmds)
	}
}

// since returns the commands sent from the n-th on.
func (r *recorder) since(n int) [][]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]any(nil), r.cmds[n:]...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cmds)
}

func TestReleaseIsOneDELEX(t *testing.T) {
	bubble(t, func(t *testing.T) {
		m, _ := steptest.Mini(t)
		life, die := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() {
			die()
			wg.Wait()
		}()
		// process is one buyer: its own client (recorded) and Locker.
		process := func(id string) (steps.Locker, *recorder) {
			rdb := redis.NewClient(m.Options())
			t.Cleanup(func() { rdb.Close() })
			rec := &recorder{}
			rdb.AddHook(rec)
			return lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Ctx: life,
				Go: func(f func(context.Context)) {
					wg.Add(1)
					go func() { defer wg.Done(); f(life) }()
				}}), rec
		}
		ctx := context.Background()
		a, recA := process("buyer-1")
		b, _ := process("buyer-2")

		// A holds the lock, and its release is one DELEX naming its own token: no script, no GET.
		if ok, err := a.Lock(ctx, key); err != nil || !ok {
			t.Fatalf("A's Lock = %v, %v; want true", ok, err)
		}
		token, err := m.Get(key)
		if err != nil {
			t.Fatalf("A's lock: %v", err)
		}
		from := recA.count()
		if err := a.Unlock(ctx, key); err != nil {
			t.Fatalf("A's Unlock of its own lock = %v; want nil", err)
		}
		want := fmt.Sprint([]any{"delex", key, "IFEQ", token})
		if got := recA.since(from); len(got) != 1 || fmt.Sprint(got[0]) != want {
			t.Fatalf("A's Unlock sent %v; want one command, %s", got, want)
		}
		if m.Exists(key) {
			t.Fatalf("the lock is still there after its holder's DELEX")
		}

		// A's lease runs out (the test deletes the key) and B takes the lock. A's late release
		// finds B's token: DELEX deletes nothing, A is told steps.ErrNotOwner, B keeps its lock.
		if ok, err := a.Lock(ctx, key); err != nil || !ok {
			t.Fatalf("A's second Lock = %v, %v; want true", ok, err)
		}
		m.Del(key)
		if ok, err := b.Lock(ctx, key); err != nil || !ok {
			t.Fatalf("B's Lock after A's lease ran out = %v, %v; want true", ok, err)
		}
		held, _ := m.Get(key)
		if err := a.Unlock(ctx, key); !errors.Is(err, steps.ErrNotOwner) {
			t.Errorf("A's Unlock of the lock B now holds = %v; want steps.ErrNotOwner", err)
		}
		if now, err := m.Get(key); err != nil || now != held {
			t.Fatalf("after A's late DELEX the lock is %q (%v); want B's %q, untouched", now, err, held)
		}
		if err := b.Unlock(ctx, key); err != nil {
			t.Fatalf("B's Unlock = %v; want nil", err)
		}

		// A's lease runs out and nobody takes the lock: A's release answers exactly as it did
		// when B held it. DELEX's 0 cannot say which.
		if ok, err := a.Lock(ctx, key); err != nil || !ok {
			t.Fatalf("A's third Lock = %v, %v; want true", ok, err)
		}
		m.Del(key)
		if err := a.Unlock(ctx, key); !errors.Is(err, steps.ErrNotOwner) {
			t.Errorf("A's Unlock of a lock that is gone = %v; want steps.ErrNotOwner, the same answer as for B's lock", err)
		}
	})
}
