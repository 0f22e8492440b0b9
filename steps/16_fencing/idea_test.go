package lock_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	lock "github.com/lockstep-lab/lockstep/steps/16_fencing"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// This step's idea: every acquisition of the lock takes the next number of a counter kept beside
// it, its fencing token, and the order shows that token to the inventory with its read and its
// write. A request has one token, from its first hold: a nested Lock does not take another.
//
// Each test runs in a testing/synctest bubble, on the bubble's fake clock: the server's TTLs and
// the lease guards cannot run out under a loaded machine.

const (
	key   = "lock:product:1001"
	fence = key + ":fence" // the counter the tokens come from
)

// bubble runs f in a testing/synctest bubble, and checks once it is over that nothing the test
// started outside it is left running.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	synctest.Test(t, f)
	goleak.VerifyNone(t, leaks)
}

// Two requests, of two processes, one after the other: the second's token is higher. A nested Lock
// in the second request keeps the request's token and does not count an acquisition.
func TestTokensRise(t *testing.T) {
	bubble(t, func(t *testing.T) {
		const ttl = time.Second
		m, _ := steptest.Mini(t)
		life, die := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		buyer := func(id string) steps.Locker {
			rdb := redis.NewClient(m.Options())
			t.Cleanup(func() { rdb.Close() })
			return lock.New(steps.Proc{ID: id, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl,
				Ctx: life,
				Go: func(f func(context.Context)) {
					wg.Add(1)
					go func() { defer wg.Done(); f(life) }()
				}})
		}
		t.Cleanup(func() {
			die()
			wg.Wait()
		})

		// take locks key for a fresh request of l and returns the request and its token.
		take := func(l steps.Locker, who string) (context.Context, func(), int64) {
			t.Helper()
			req, done := lock.WithRequest(context.Background())
			if got := lock.Token(req); got != 0 {
				t.Errorf("%s's token before Lock = %d; want 0", who, got)
			}
			if ok, err := l.Lock(req, key); err != nil || !ok {
				done()
				t.Fatalf("%s's Lock = %v, %v; want true", who, ok, err)
			}
			return req, done, lock.Token(req)
		}
		counter := func() int64 {
			s, err := m.Get(fence)
			if err != nil {
				t.Fatalf("the token counter %s: %v", fence, err)
			}
			n, _ := strconv.ParseInt(s, 10, 64)
			return n
		}

		a := buyer("buyer-1")
		reqA, doneA, first := take(a, "the first request")
		defer doneA()
		if first <= 0 {
			t.Errorf("the first request's token = %d; want > 0", first)
		}
		if err := a.Unlock(reqA, key); err != nil {
			t.Fatalf("the first request's Unlock = %v", err)
		}

		b := buyer("buyer-2")
		reqB, doneB, second := take(b, "the second request")
		defer doneB()
		if second <= first {
			t.Errorf("the second request's token = %d, the first's %d; want it higher",
				second, first)
		}
		if n := counter(); n != second {
			t.Errorf("the counter stands at %d after the second acquisition; want %d, "+
				"the token it handed out", n, second)
		}

		// The work's nested call takes the same lock again, in the same request.
		if ok, err := b.Lock(reqB, key); err != nil || !ok {
			t.Fatalf("the nested Lock = %v, %v; want true", ok, err)
		}
		if got := lock.Token(reqB); got != second {
			t.Errorf("after the nested Lock the request's token = %d; want %d, its first hold's",
				got, second)
		}
		if n := counter(); n != second {
			t.Errorf("the counter stands at %d after the nested Lock; want %d: "+
				"a nested hold is no new acquisition", n, second)
		}
		for range 2 {
			if err := b.Unlock(reqB, key); err != nil {
				t.Errorf("the second request's Unlock = %v", err)
			}
		}
		if m.Exists(key) {
			t.Errorf("the lock is still held after both of the second request's holds " +
				"were given back")
		}
		if !m.Exists(fence) {
			t.Errorf("the token counter is gone with the lock; it must outlive every lock, " +
				"or tokens repeat")
		}
	})
}

// shop is an inventory that records the token each fenced read and write shows it, and fails the
// test on an unfenced one.
type shop struct {
	t      *testing.T
	mu     sync.Mutex
	stock  int
	tokens []int64
}

func (s *shop) LockKey() string { return key }
func (s *shop) Stock(context.Context) (int, error) {
	s.t.Error("the order read the stock without its token")
	return s.stock, nil
}
func (s *shop) SetStock(context.Context, int) error {
	s.t.Error("the order wrote the stock without its token")
	return nil
}
func (s *shop) Work(context.Context) error { return nil }
func (s *shop) Sell(context.Context) error {
	s.t.Error("the order sold without its token")
	return nil
}
func (s *shop) StockFenced(_ context.Context, token int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, token)
	return s.stock, nil
}
func (s *shop) SetStockFenced(_ context.Context, n int, token int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, token)
	s.stock = n
	return nil
}

// Two orders, one after the other: each shows the inventory its own token with its read and with
// its write, and the second order's token is the higher.
func TestOrderShowsItsToken(t *testing.T) {
	bubble(t, func(t *testing.T) {
		_, rdb := steptest.Mini(t)
		life, die := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		defer func() {
			die()
			wg.Wait()
		}()
		l := lock.New(steps.Proc{ID: "buyer-1", Redis: rdb, Nodes: []*redis.Client{rdb},
			TTL: time.Second, Ctx: life,
			Go: func(f func(context.Context)) {
				wg.Add(1)
				go func() { defer wg.Done(); f(life) }()
			}})
		s := &shop{t: t, stock: 2}
		for i := range 2 {
			if err := lock.Order(context.Background(), l, s); err != nil {
				t.Fatalf("order %d = %v", i+1, err)
			}
		}
		if len(s.tokens) != 4 {
			t.Fatalf("the inventory saw tokens %v; want 4: a read and a write of each order",
				s.tokens)
		}
		r1, w1, r2, w2 := s.tokens[0], s.tokens[1], s.tokens[2], s.tokens[3]
		if r1 <= 0 || w1 != r1 || w2 != r2 || r2 <= r1 {
			t.Errorf("the inventory saw tokens %v; want each order's read and write to show "+
				"one token > 0, the second order's higher", s.tokens)
		}
		if s.stock != 0 {
			t.Errorf("stock %d after two orders of 2 units; want 0", s.stock)
		}
	})
}
