package scenario_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// The adversaries: Lockers and order handlers the referee was not written next to, each odd in
// one way a learner's lock could be. The referee must judge each from what happened, or say what
// it could not see; these tests run on $LAB_REDIS like the steps' own.

// setnx is a lock like step 04's: SET NX PX to take it, and a pluggable way to give it back.
type setnx struct {
	rdb    *redis.Client
	id     string
	ttl    time.Duration
	unlock func(ctx context.Context, l *setnx, key string) error
	spin   bool // wait for the lock instead of answering false
}

func (l *setnx) Lock(ctx context.Context, key string) (bool, error) {
	for {
		ok, err := l.rdb.SetNX(ctx, key, l.id, l.ttl).Result()
		if err != nil || ok || !l.spin {
			return ok, err
		}
	}
}

func (l *setnx) Unlock(ctx context.Context, key string) error { return l.unlock(ctx, l, key) }

func newSetNX(spin bool, unlock func(ctx context.Context, l *setnx, key string) error) func(p steps.Proc) steps.Locker {
	return func(p steps.Proc) steps.Locker {
		b := make([]byte, 8)
		rand.Read(b)
		return &setnx{rdb: p.Redis, id: hex.EncodeToString(b), ttl: p.TTL, unlock: unlock, spin: spin}
	}
}

// orderDefer is step 03's handler: lock, defer the unlock, read, work, write.
func orderDefer(ctx context.Context, l steps.Locker, s steps.Shop) (err error) {
	key := s.LockKey()
	ok, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return steps.ErrBusy
	}
	defer func() { err = errors.Join(err, l.Unlock(context.WithoutCancel(ctx), key)) }()
	n, err := s.Stock(ctx)
	if err != nil {
		return err
	}
	if n <= 0 {
		return steps.ErrSoldOut
	}
	if err := s.Work(ctx); err != nil {
		return err
	}
	return s.SetStock(ctx, n-1)
}

var (
	delPipelined = func(ctx context.Context, l *setnx, key string) error {
		_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
		return err
	}
	delTx = func(ctx context.Context, l *setnx, key string) error {
		_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
		return err
	}
	delScript = func(ctx context.Context, l *setnx, key string) error {
		return l.rdb.Eval(ctx, "return redis.call('DEL', KEYS[1])", []string{key}).Err()
	}
	// delRogue deletes the lock through a client of its own, which bypasses the process: its
	// network, its crash, and the referee's watcher.
	delRogue = func(ctx context.Context, l *setnx, key string) error {
		c := redis.NewClient(l.rdb.Options())
		defer c.Close()
		return c.Del(ctx, key).Err()
	}
	delPlain = func(ctx context.Context, l *setnx, key string) error { return l.rdb.Del(ctx, key).Err() }
)

// TestAdversaries plays each odd lock under the scenarios that expose it.
func TestAdversaries(t *testing.T) {
	pipelined := newSetNX(false, delPipelined)
	cases := []struct {
		name     string
		new      func(steps.Proc) steps.Locker
		order    func(context.Context, steps.Locker, steps.Shop) error
		sc       steps.Scenario
		want     []steps.Kind // the violations
		unjudged []steps.Kind // what the referee must say it could not judge
	}{
		// A DEL sent in a pipeline, in MULTI/EXEC, or from a script is a DEL all the same.
		{"del in a pipeline", pipelined, orderDefer, steps.Slow, []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease}, nil},
		{"del in a pipeline", pipelined, orderDefer, steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, nil},
		{"del in MULTI/EXEC", newSetNX(false, delTx), orderDefer, steps.Slow, []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease}, nil},
		{"del in MULTI/EXEC", newSetNX(false, delTx), orderDefer, steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, nil},
		{"del in a script", newSetNX(false, delScript), orderDefer, steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, nil},
		// A refusal is judged by its outcome, whatever error the handler chose to return.
		{"refusal answered nil", newSetNX(false, delPlain), func(ctx context.Context, l steps.Locker, s steps.Shop) error {
			if err := orderDefer(ctx, l, s); !errors.Is(err, steps.ErrBusy) {
				return err
			}
			return nil // "nothing went wrong"
		}, steps.Contention, []steps.Kind{steps.LostSales}, nil},
		// (Unlocking before the stock write is TestRefereeUnlockBeforeTheWrite: planted, since
		// a handler has no way to wait for the next buyer to get in.)
		// A Lock that says yes to everyone is no lock at all.
		{"lock that always says yes", func(p steps.Proc) steps.Locker {
			return lockFunc{lock: func(ctx context.Context, key string) (bool, error) {
				p.Redis.SetNX(ctx, key, p.ID, p.TTL)
				return true, nil
			}, unlock: func(ctx context.Context, key string) error { return p.Redis.Del(ctx, key).Err() }}
		}, orderDefer, steps.Contention, []steps.Kind{steps.Overlap, steps.Oversold}, nil},
		// A Lock that takes the lock and answers false turns buyers away and leaves the lock
		// to its TTL: lost sales, and nothing stuck.
		{"lock that takes it and says no", func(p steps.Proc) steps.Locker {
			return lockFunc{lock: func(ctx context.Context, key string) (bool, error) {
				p.Redis.SetNX(ctx, key, p.ID, p.TTL)
				return false, nil
			}, unlock: func(ctx context.Context, key string) error { return nil }}
		}, orderDefer, steps.Contention, []steps.Kind{steps.LostSales}, nil},
		// A client the referee cannot see is reported, never guessed around.
		{"del from a client of its own", newSetNX(false, delRogue), orderDefer, steps.UnlockRace, nil, []steps.Kind{steps.ForeignRelease}},
		// A correct lock that hands itself to the next waiter is not a foreign release.
		{"hand-off lock", newHandOff, orderDefer, steps.Contention, nil, nil},
		{"hand-off lock", newHandOff, orderDefer, steps.UnlockRace, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name+"/"+string(c.sc), func(t *testing.T) {
			steptest.Bubble(t, func(t *testing.T) {
				env := steptest.Env(t, redisenv.Options{})
				st := &steps.Step{Slug: "adversary", New: c.new, Order: c.order}
				rep, _, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, c.sc, scenario.StallTries)
				if err != nil {
					t.Fatal(err)
				}
				want, unjudged := orEmpty(c.want), orEmpty(c.unjudged)
				if !slices.Equal(rep.Violations, want) || !slices.Equal(rep.Unjudged, unjudged) {
					t.Errorf("want violations %v and unjudged %v; got %v and %v\n%s", want, unjudged, rep.Violations, rep.Unjudged, rep.Text())
				}
				if c.name == "hand-off lock" {
					// Judged or not, a lock that only ever deletes its own never releases another's.
					if slices.Contains(rep.Found, steps.ForeignRelease) {
						t.Errorf("a foreign release was found where there is none:\n%s", rep.Text())
					}
				}
			})
		})
	}
}

func orEmpty(k []steps.Kind) []steps.Kind {
	if k == nil {
		return []steps.Kind{}
	}
	return k
}

type lockFunc struct {
	lock   func(ctx context.Context, key string) (bool, error)
	unlock func(ctx context.Context, key string) error
}

func (l lockFunc) Lock(ctx context.Context, key string) (bool, error) { return l.lock(ctx, key) }
func (l lockFunc) Unlock(ctx context.Context, key string) error       { return l.unlock(ctx, key) }

// handOff is a correct FIFO lock that hands itself over: a waiter queues its token, and the
// holder's unlock writes the next token into the lock instead of deleting it. The waiter never
// writes the lock it gets.
type handOff struct {
	rdb *redis.Client
	id  string
	ttl time.Duration
}

func newHandOff(p steps.Proc) steps.Locker {
	b := make([]byte, 8)
	rand.Read(b)
	return &handOff{rdb: p.Redis, id: hex.EncodeToString(b), ttl: p.TTL}
}

var handOffUnlock = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local next = redis.call('LPOP', KEYS[2])
if next then redis.call('SET', KEYS[1], next, 'PX', ARGV[2]) else redis.call('DEL', KEYS[1]) end
return 1`)

func (l *handOff) Lock(ctx context.Context, key string) (bool, error) {
	ok, err := l.rdb.SetNX(ctx, key, l.id, l.ttl).Result()
	if ok || err != nil {
		return ok, err
	}
	if err := l.rdb.RPush(ctx, key+":queue", l.id).Err(); err != nil {
		return false, err
	}
	for {
		v, err := l.rdb.Get(ctx, key).Result()
		if err == redis.Nil {
			// The holder's lease ran out with nobody to hand it to: take it as anyone would.
			if ok, err := l.rdb.SetNX(ctx, key, l.id, l.ttl).Result(); ok || err != nil {
				l.rdb.LRem(context.WithoutCancel(ctx), key+":queue", 0, l.id)
				return ok, err
			}
			continue
		}
		if err != nil {
			return false, err
		}
		if v == l.id {
			return true, nil
		}
		time.Sleep(time.Millisecond)
	}
}

func (l *handOff) Unlock(ctx context.Context, key string) error {
	return handOffUnlock.Run(ctx, l.rdb, []string{key, key + ":queue"}, l.id, l.ttl.Milliseconds()).Err()
}

// TestRefereeSaysWhatItCannotSee: a Redis user that may not read the lock (no DUMP), and a run
// whose orders ignore their deadline: the referee reports what it could not judge, and the
// verdict on those kinds is withheld, never a quiet ✓.
func TestRefereeSaysWhatItCannotSee(t *testing.T) {
	t.Run("no DUMP", func(t *testing.T) {
		srv := needServer(t)
		admin := redis.NewClient(srv.InventoryOptions())
		defer admin.Close()
		if err := admin.Do(context.Background(), "ACL", "SETUSER", "nodump", "on", ">pw", "~*", "&*", "+@all", "-dump").Err(); err != nil {
			t.Fatal(err)
		}
		env, err := redisenv.Open("redis://nodump:pw@"+srv.InventoryOptions().Addr+"/0", redisenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		st, _ := catalogFind("04")
		for _, sc := range []steps.Scenario{steps.UnlockRace, steps.Crash} {
			rep, _, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, sc, scenario.StallTries)
			if err != nil {
				t.Fatal(err)
			}
			judgesForeign := slices.Contains(scenario.Judges(sc), steps.ForeignRelease)
			if rep.Complete() == judgesForeign || (judgesForeign && !slices.Equal(rep.Unjudged, []steps.Kind{steps.ForeignRelease})) {
				t.Errorf("%s: unjudged %v, complete %v\n%s", sc, rep.Unjudged, rep.Complete(), rep.Text())
			}
		}
	})
	t.Run("past the deadline", func(t *testing.T) {
		steptest.Bubble(t, func(t *testing.T) {
			wake := make(chan struct{})
			defer close(wake)
			st := &steps.Step{Slug: "sleeper", New: func(p steps.Proc) steps.Locker {
				return lockFunc{lock: func(ctx context.Context, key string) (bool, error) {
					<-wake // deaf to its context, until the test ends
					return false, nil
				}, unlock: func(context.Context, string) error { return nil }}
			}, Order: orderDefer}
			tm := history.Timing{TTL: 30 * time.Millisecond, Work: 3 * time.Millisecond, RTT: 250 * time.Microsecond}
			rep, _, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: steptest.Env(t, redisenv.Options{}), Timing: tm}, steps.Contention, scenario.StallTries)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TimedOut == "" || rep.Complete() {
				t.Fatalf("a run past its deadline was judged:\n%s", rep.Text())
			}
		})
	})
}
