package sim

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine an arena started outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// plain is a step that never touches the lock by itself: the referee tests drive its processes'
// clients and shops by hand, planting exactly the interleaving they judge. Its order handler asks
// for nothing and reads the stock, so the end-of-run probe finds the shop open.
var plain = &steps.Step{
	Slug: "00_planted",
	New:  func(p steps.Proc) steps.Locker { return nil },
	Order: func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		_, err := s.Stock(ctx)
		return err
	},
}

func newTestArena(t *testing.T, stock int) (*Arena, *process, *process) {
	t.Helper()
	env, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewArena(context.Background(), Config{Step: plain, Env: env, Stock: stock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		env.Close()
	})
	return a, a.addBuyer(), a.addBuyer()
}

// begin starts an order of p by hand and returns its shop.
func begin(a *Arena, p *process) *shop {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID++
	p.orders++
	o := &order{id: a.nextID, p: p, k: p.orders, began: a.Since()}
	p.current = append(p.current, o)
	a.ref.orders = append(a.ref.orders, o)
	return &shop{p: p, o: o}
}

func sell(t *testing.T, a *Arena, p *process) {
	t.Helper()
	s := begin(a, p)
	n, err := s.Stock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetStock(context.Background(), n-1); err != nil {
		t.Fatal(err)
	}
	a.done(s.o, nil)
}

// TestRefereeCatchesPlantedOverlap: two buyers read the stock before either writes it.
func TestRefereeCatchesPlantedOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		s1, s2 := begin(a, p1), begin(a, p2)
		n1, _ := s1.Stock(ctx)
		n2, _ := s2.Stock(ctx)
		s1.SetStock(ctx, n1-1)
		s2.SetStock(ctx, n2-1)
		rep := a.Report(ctx, steps.Contention)
		if len(rep.Overlaps) != 1 || rep.Overlaps[0].A != 1 || rep.Overlaps[0].B != 2 {
			t.Fatalf("want one overlap of buyers 1 and 2, got %+v", rep.Overlaps)
		}
		if rep.Confirmed != 2 || rep.FinalStock != 4 || rep.Oversold != 1 {
			t.Fatalf("want 2 confirmed, stock 4, 1 oversold; got %d, %d, %d", rep.Confirmed, rep.FinalStock, rep.Oversold)
		}
		if want := []steps.Kind{steps.Overlap, steps.Oversold}; !slices.Equal(rep.Violations, want) {
			t.Fatalf("want violations %v, got %v", want, rep.Violations)
		}
	})
}

// TestRefereeOrdersByTheInventory: the spans are judged in the inventory's order of commands, not
// in the order their replies reached the referee. Buyer 1's read is the first command the
// inventory saw, but its reply is handed to the referee only after buyer 2 has read and written:
// buyer 2 was inside while buyer 1 was, and the referee must say so.
func TestRefereeOrdersByTheInventory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		s1, s2 := begin(a, p1), begin(a, p2)
		seq1 := a.stamp() // buyer 1's read, as the inventory ordered it
		s2.Stock(ctx)
		s2.SetStock(ctx, 4)
		a.stockRead(s1.o, seq1, 5) // its reply arrives late
		s1.SetStock(ctx, 4)
		rep := a.Report(ctx, steps.Contention)
		if len(rep.Overlaps) != 1 || rep.Overlaps[0].A != 1 || rep.Overlaps[0].B != 2 {
			t.Fatalf("want buyer 2 found inside buyer 1's span, got %+v\n%s", rep.Overlaps, rep.Text())
		}
		if rep.Oversold != 1 {
			t.Fatalf("want 1 oversold, got %d", rep.Oversold)
		}
	})
}

// TestRefereeCatchesPlantedForeignRelease: buyer 1 takes the lock, buyer 2 deletes it.
func TestRefereeCatchesPlantedForeignRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		if err := p1.lock[0].SetNX(ctx, a.lockKey, "buyer-1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := p2.lock[0].Del(ctx, a.lockKey).Err(); err != nil {
			t.Fatal(err)
		}
		rep := a.Report(ctx, steps.UnlockRace)
		if len(rep.ForeignReleases) != 1 || rep.ForeignReleases[0].By != 2 || rep.ForeignReleases[0].Owner != 1 {
			t.Fatalf("want buyer 2 deleting buyer 1's lock, got %+v", rep.ForeignReleases)
		}
		if want := []steps.Kind{steps.ForeignRelease}; !slices.Equal(rep.Violations, want) {
			t.Fatalf("want violations %v, got %v", want, rep.Violations)
		}
	})
}

// TestRefereeQuietOnCorrectRun: buyers take the lock in turn, sell one unit each and delete
// their own lock; nothing is violated, and the lock is free at the end.
func TestRefereeQuietOnCorrectRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		for _, p := range []*process{p1, p2, p1} {
			if ok, err := p.lock[0].SetNX(ctx, a.lockKey, p.name, 0).Result(); !ok || err != nil {
				t.Fatalf("%s could not lock: %v %v", p.name, ok, err)
			}
			sell(t, a, p)
			if err := p.lock[0].Del(ctx, a.lockKey).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for _, sc := range steps.Scenarios {
			rep := a.Report(ctx, sc)
			if len(rep.Found) != 0 || !rep.Complete() {
				t.Fatalf("%s: a correct run was judged %v\n%s", sc, rep.Found, rep.Text())
			}
			if rep.Confirmed != 3 || rep.FinalStock != 2 || rep.Commands != 3*4 {
				t.Fatalf("want 3 confirmed, stock 2, 12 commands; got %d, %d, %d", rep.Confirmed, rep.FinalStock, rep.Commands)
			}
		}
	})
}

// TestRefereeFollowsValueNotExistence: buyer 2 overwrites the lock buyer 1 holds (the key never
// stops existing): that replaces buyer 1's lock, and buyer 1's DEL afterwards deletes buyer 2's.
func TestRefereeFollowsValueNotExistence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		if err := p1.lock[0].SetNX(ctx, a.lockKey, "buyer-1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := p2.lock[0].Set(ctx, a.lockKey, "buyer-2", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := p1.lock[0].Del(ctx, a.lockKey).Err(); err != nil {
			t.Fatal(err)
		}
		rep := a.Report(ctx, steps.Slow)
		want := []Foreign{{By: 2, Owner: 1}, {By: 1, Owner: 2}}
		if len(rep.ForeignReleases) != 2 {
			t.Fatalf("want %v, got %+v", want, rep.ForeignReleases)
		}
		for i, f := range rep.ForeignReleases {
			if f.By != want[i].By || f.Owner != want[i].Owner {
				t.Fatalf("want %v, got %+v", want, rep.ForeignReleases)
			}
		}
	})
}

// TestRefereeNeverBlamesExpiry: a lock that runs out is nobody's release, whatever command comes
// next — a SET NX that takes the free key, a GET, a PEXPIRE that finds nothing.
func TestRefereeNeverBlamesExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		for _, next := range []func() error{
			func() error { return p2.lock[0].Get(ctx, a.lockKey).Err() },
			func() error { return p2.lock[0].PExpire(ctx, a.lockKey, time.Second).Err() },
			func() error { return p2.lock[0].SetNX(ctx, a.lockKey, "buyer-2", 20*time.Millisecond).Err() },
		} {
			p1.lock[0].Del(ctx, a.lockKey)
			if err := p1.lock[0].SetNX(ctx, a.lockKey, "buyer-1", 20*time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(30 * time.Millisecond)
			if err := next(); err != nil && err.Error() != "redis: nil" {
				t.Fatal(err)
			}
		}
		rep := a.Report(ctx, steps.Slow)
		if len(rep.ForeignReleases) != 0 || !rep.Complete() {
			t.Fatalf("an expiry was blamed on a buyer: %+v\n%s", rep.ForeignReleases, rep.Text())
		}
	})
}

// TestRefereeJudgesAmbiguityByCommand: where a watcher cannot rule out an expiry during a command
// (Change.Ambiguous), a command that cannot delete is never blamed, a DEL is judged by its reply,
// and a script is reported as unseen rather than guessed.
func TestRefereeJudgesAmbiguityByCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, _, p2 := newTestArena(t, 5)
		e := a.nodes[0]
		held := redisenv.Value{Exists: true, Print: "string:buyer-1"}
		vanished := redisenv.Change{Before: held, Ambiguous: true}
		cases := []struct {
			name    string
			send    func() []any
			foreign int
			blind   bool
		}{
			{"SET NX", func() []any { return []any{"set", a.lockKey, "buyer-2", "nx"} }, 0, false},
			{"DEL that deleted nothing", func() []any { return []any{"del", a.lockKey} }, 0, false},
			{"a script", func() []any { return []any{"eval", "return 0", 1, a.lockKey} }, 0, true},
		}
		for _, c := range cases {
			e.node.Admin().Del(ctx, a.lockKey)
			cmd := p2.lock[0].Do(ctx, c.send()...)
			a.mu.Lock()
			e.owners[held.Print], e.val = 1, held
			before := len(a.ref.foreign)
			blinds := len(a.ref.blinds)
			a.judge(e, p2, cmdsOf(cmd), nil, vanished)
			got, gotBlind := len(a.ref.foreign)-before, len(a.ref.blinds) > blinds
			a.mu.Unlock()
			if got != c.foreign || gotBlind != c.blind {
				t.Errorf("%s: %d foreign releases (want %d), blind %v (want %v)", c.name, got, c.foreign, gotBlind, c.blind)
			}
		}
	})
}

func cmdsOf(cmds ...redis.Cmder) []redis.Cmder { return cmds }

// lockedStep takes a SETNX lock with no TTL in its handler and gives it back only if unlock is
// set: the stuck probe's subject.
func lockedStep(unlock bool) *steps.Step {
	return &steps.Step{
		Slug: "00_setnx",
		New:  func(p steps.Proc) steps.Locker { return setnxLocker{p} },
		Order: func(ctx context.Context, l steps.Locker, s steps.Shop) error {
			if ok, err := l.Lock(ctx, s.LockKey()); !ok || err != nil {
				return steps.ErrBusy
			}
			if unlock {
				defer l.Unlock(ctx, s.LockKey())
			}
			n, err := s.Stock(ctx)
			if err != nil {
				return err
			}
			return s.SetStock(ctx, n-1)
		},
	}
}

type setnxLocker struct{ p steps.Proc }

func (l setnxLocker) Lock(ctx context.Context, key string) (bool, error) {
	return l.p.Redis.SetNX(ctx, key, l.p.ID, 0).Result()
}
func (l setnxLocker) Unlock(ctx context.Context, key string) error {
	return l.p.Redis.Del(ctx, key).Err()
}

// TestRefereePlantsEveryKind plants, by hand, each kind the overlap and foreign-release tests
// above do not: a lost sale, a failed reentry, a flood, and a stuck lock (and its absence).
func TestRefereePlantsEveryKind(t *testing.T) {
	ctx := context.Background()
	t.Run("lost-sales", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, p1, _ := newTestArena(t, 5)
			s := begin(a, p1)
			a.done(s.o, nil) // answered "fine", sold nothing, never got in
			rep := a.Report(ctx, steps.Contention)
			if !slices.Equal(rep.Violations, []steps.Kind{steps.LostSales}) || rep.LostSales[0].Stock != 5 {
				t.Fatalf("want one lost sale with 5 units on the shelf, got %v %+v", rep.Violations, rep.LostSales)
			}
		})
	})
	t.Run("reentry-failed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, p1, _ := newTestArena(t, 5)
			p1.locker.inner = setnxLocker{steps.Proc{ID: p1.name, Redis: p1.lock[0]}}
			s := begin(a, p1)
			p1.locker.Lock(withOrder(ctx, s.o), a.lockKey)
			if err := s.nested(withOrder(ctx, s.o)); err != ErrReentry {
				t.Fatalf("nested returned %v", err)
			}
			rep := a.Report(ctx, steps.Reentrant)
			if !slices.Equal(rep.Violations, []steps.Kind{steps.ReentryFailed}) || rep.ReentryFailures[0].Buyer != 1 {
				t.Fatalf("want buyer 1's reentry failed, got %v %+v", rep.Violations, rep.ReentryFailures)
			}
		})
	})
	t.Run("flood", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, p1, _ := newTestArena(t, 5)
			for range steps.FloodLimit + 1 {
				p1.lock[0].Get(ctx, a.lockKey)
			}
			sell(t, a, p1)
			rep := a.Report(ctx, steps.Load)
			if !slices.Equal(rep.Violations, []steps.Kind{steps.Flood}) {
				t.Fatalf("want flood, got %v (%.0f commands per order)", rep.Violations, rep.CommandsPerOrder)
			}
		})
	})
	for _, unlock := range []bool{false, true} {
		t.Run("stuck", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				env, err := redisenv.NewEmbedded()
				if err != nil {
					t.Fatal(err)
				}
				defer env.Close()
				a, err := NewArena(ctx, Config{Step: lockedStep(unlock), Env: env, Stock: 5})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close()
				p := a.addBuyer()
				if err := a.order(ctx, p, nil); err != nil {
					t.Fatal(err)
				}
				rep := a.Report(ctx, steps.Crash)
				if unlock {
					if rep.Stuck || len(rep.Violations) != 0 {
						t.Fatalf("a lock given back was judged stuck:\n%s", rep.Text())
					}
					return
				}
				if !rep.Stuck || rep.StuckOwner != 1 || !slices.Equal(rep.Violations, []steps.Kind{steps.Stuck}) {
					t.Fatalf("want the lock stuck with buyer 1, got stuck=%v owner=%d %v\n%s", rep.Stuck, rep.StuckOwner, rep.Violations, rep.Text())
				}
			})
		})
	}
}

// TestRefereeFollowsAHandOff: a holder that hands its lock to a waiter by writing the waiter's
// token (a correct FIFO lock) has not released anything of another's, and the waiter, whose Lock
// returns without a write of its own, owns what was written for it: its delete is its own.
func TestRefereeFollowsAHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		if err := p1.lock[0].SetNX(ctx, a.lockKey, "buyer-1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		o2 := begin(a, p2).o
		c := a.callBegan(p2, withOrder(ctx, o2), lockCall) // buyer 2 starts waiting after buyer 1 got it
		if err := p1.lock[0].Set(ctx, a.lockKey, "buyer-2", 0).Err(); err != nil {
			t.Fatal(err) // buyer 1 hands it over
		}
		a.lockReturned(c, true, nil)
		if err := p2.lock[0].Del(ctx, a.lockKey).Err(); err != nil {
			t.Fatal(err)
		}
		rep := a.Report(ctx, steps.UnlockRace)
		if len(rep.ForeignReleases) != 0 {
			t.Fatalf("a hand-off was judged a foreign release: %+v", rep.ForeignReleases)
		}
	})
}

// TestRefereeUnlockBeforeTheWrite: an order that unlocks, then writes the stock, is inside until
// its write: a second order that locks and reads in between overlaps it (the lock's release does
// not end a critical section; the shop's write does).
func TestRefereeUnlockBeforeTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a, p1, p2 := newTestArena(t, 5)
		for _, p := range []*process{p1, p2} {
			p.locker.inner = setnxLocker{steps.Proc{ID: p.name, Redis: p.lock[0]}}
		}
		s1, s2 := begin(a, p1), begin(a, p2)
		c1, c2 := withOrder(ctx, s1.o), withOrder(ctx, s2.o)
		p1.locker.Lock(c1, a.lockKey)
		n1, _ := s1.Stock(c1)
		p1.locker.Unlock(c1, a.lockKey) // unlocks early
		if ok, _ := p2.locker.Lock(c2, a.lockKey); !ok {
			t.Fatal("buyer 2 could not take the freed lock")
		}
		n2, _ := s2.Stock(c2)
		s1.SetStock(c1, n1-1) // ... and writes afterwards
		s2.SetStock(c2, n2-1)
		p2.locker.Unlock(c2, a.lockKey)
		rep := a.Report(ctx, steps.Contention)
		if want := []steps.Kind{steps.Overlap, steps.Oversold}; !slices.Equal(rep.Violations, want) {
			t.Fatalf("want %v, got %v\n%s", want, rep.Violations, rep.Text())
		}
	})
}
