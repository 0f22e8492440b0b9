package scenario_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Learner-style locks: each written the way a learner could write a lock or its handler, odd in
// one way the lab's first referee judged by the shape of the steps (its key, its client, its
// context, which command deletes), and so judged wrong. Each is judged here from what happened,
// on the embedded backend in virtual time and, where this machine has redis-server, on real
// Redis: the same verdict both ways, or what the referee could not see.

// learner is the lock most of them start from: step 04's SET NX PX, and whatever release.
type learner struct {
	p     steps.Proc
	rdb   *redis.Client
	id    string
	key   func(string) string // the key it locks, from the one the shop names
	ctx   func(context.Context) context.Context
	lock  func(l *learner, ctx context.Context, key string) (bool, error)
	free  func(l *learner, ctx context.Context, key string) error
	pause time.Duration // between tries; 0: it does not wait
}

func token() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (l *learner) Lock(ctx context.Context, key string) (bool, error) {
	key, ctx = l.key(key), l.ctx(ctx)
	if l.lock != nil {
		return l.lock(l, ctx, key)
	}
	for {
		ok, err := l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
		if ok || err != nil || l.pause == 0 {
			return ok, err
		}
		select {
		case <-time.After(l.pause):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

func (l *learner) Unlock(ctx context.Context, key string) error {
	return l.free(l, l.ctx(ctx), l.key(key))
}

// newLearner builds a learner from its oddities.
func newLearner(opts ...func(*learner)) func(steps.Proc) steps.Locker {
	return func(p steps.Proc) steps.Locker {
		l := &learner{p: p, rdb: p.Redis, id: token(),
			key: func(k string) string { return k },
			ctx: func(c context.Context) context.Context { return c },
			free: func(l *learner, ctx context.Context, key string) error {
				return l.rdb.Del(ctx, key).Err()
			}}
		for _, o := range opts {
			o(l)
		}
		return l
	}
}

// The oddities.
var (
	// 1: the lock under a key of its own: "mylock" beside the shop's.
	myKey = func(l *learner) {
		l.key = func(k string) string { return k[:strings.LastIndex(k, ":")+1] + "mylock" }
	}
	// 2: a go-redis client of its own, dialled from the lab's options.
	ownClient = func(l *learner) { l.rdb = redis.NewClient(l.p.Redis.Options()) }
	// 3: every command sent with the process's context, not the call's.
	procCtx = func(l *learner) { l.ctx = func(context.Context) context.Context { return l.p.Ctx } }
	// 05's release: GET, compare, DEL.
	getThenDel = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			if v, err := l.rdb.Get(ctx, key).Result(); err != nil || v != l.id {
				return steps.ErrNotOwner
			}
			return l.rdb.Del(ctx, key).Err()
		}
	}
	// 4: the owner checked by a read-only script, then DEL.
	roScriptThenDel = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			v, err := l.rdb.EvalRO(ctx, "return redis.call('GET', KEYS[1])", []string{key}).Text()
			if err != nil || v != l.id {
				return steps.ErrNotOwner
			}
			return l.rdb.Del(ctx, key).Err()
		}
	}
	// 7: released by PEXPIRE key 1.
	pexpire1 = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.PExpire(ctx, key, time.Millisecond).Err()
		}
	}
	// released by SET … PX 1.
	setPX1 = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Set(ctx, key, "done", time.Millisecond).Err()
		}
	}
	// released by GETDEL.
	getdel = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.GetDel(ctx, key).Err() }
	}
	// 9: the lock in a hash field with a TTL of its own (HSETEX … FNX PX), released by HGET, HDEL.
	hashField = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			n, err := l.rdb.HSetEXWithArgs(ctx, key, &redis.HSetEXOptions{Condition: redis.HSetEXFNX,
				ExpirationType: redis.HSetEXExpirationPX, ExpirationVal: l.p.TTL.Milliseconds()}, "owner", l.id).Result()
			return n == 1, err
		}
		l.free = func(l *learner, ctx context.Context, key string) error {
			if v, err := l.rdb.HGet(ctx, key, "owner").Result(); err != nil || v != l.id {
				return steps.ErrNotOwner
			}
			return l.rdb.HDel(ctx, key, "owner").Err()
		}
	}
	// a lock on two keys: both taken, both deleted.
	twoKeys = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			ok, err := l.rdb.SetNX(ctx, key+":a", l.id, l.p.TTL).Result()
			if !ok || err != nil {
				return false, err
			}
			return l.rdb.SetNX(ctx, key+":b", l.id, l.p.TTL).Result()
		}
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Del(ctx, key+":a", key+":b").Err()
		}
	}
	// an optimistic lock: WATCH, GET, MULTI SET; released by WATCH, GET, MULTI DEL, EXEC.
	watchMulti = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			got := false
			err := l.rdb.Watch(ctx, func(tx *redis.Tx) error {
				if n, err := tx.Exists(ctx, key).Result(); err != nil || n > 0 {
					return err
				}
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Set(ctx, key, l.id, l.p.TTL).Err() })
				got = err == nil
				return err
			}, key)
			if errors.Is(err, redis.TxFailedErr) {
				return false, nil
			}
			return got, err
		}
		l.free = func(l *learner, ctx context.Context, key string) error {
			err := l.rdb.Watch(ctx, func(tx *redis.Tx) error {
				if v, err := tx.Get(ctx, key).Result(); err != nil || v != l.id {
					return steps.ErrNotOwner
				}
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, key).Err() })
				return err
			}, key)
			if errors.Is(err, redis.TxFailedErr) {
				return steps.ErrNotOwner
			}
			return err
		}
	}
	// a Locker that lies: yes to everyone, no command.
	liar = func(l *learner) {
		l.lock = func(*learner, context.Context, string) (bool, error) { return true, nil }
		l.free = func(*learner, context.Context, string) error { return nil }
	}
	// waits, sleeping a quarter TTL between tries.
	backOff = func(l *learner) { l.pause = l.p.TTL / 4 }
)

// Handlers learners write.
var (
	// 5: step 03's, with a fail-fast peek at the stock before taking the lock.
	orderPeek = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		if n, err := s.Stock(ctx); err != nil || n <= 0 {
			return steps.ErrSoldOut
		}
		return orderDefer(ctx, l, s)
	}
	// 6: the spin moved out of Lock into the handler.
	orderSpin = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		for {
			err := orderDefer(ctx, l, s)
			if !errors.Is(err, steps.ErrBusy) {
				return err
			}
			select {
			case <-time.After(time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	// 8: a refusal with an error of its own.
	errMine     = errors.New("could not get the lock, sorry")
	orderOwnErr = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		err := orderDefer(ctx, l, s)
		if errors.Is(err, steps.ErrBusy) {
			return errMine
		}
		return err
	}
	// reads the stock before it takes the lock, and writes one less than what it read: under
	// the lock, but from a read taken outside it.
	orderStaleRead = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		n, err := s.Stock(ctx)
		if err != nil || n <= 0 {
			return errors.Join(err, steps.ErrSoldOut)
		}
		key := s.LockKey()
		ok, err := l.Lock(ctx, key)
		if err != nil || !ok {
			return errors.Join(err, steps.ErrBusy)
		}
		defer l.Unlock(context.WithoutCancel(ctx), key)
		if err := s.Work(ctx); err != nil {
			return err
		}
		return s.SetStock(ctx, n-1)
	}
	// a refusal returned as no error at all: "no lock, no sale, nothing went wrong".
	orderRefusalNil = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		if err := orderDefer(ctx, l, s); !errors.Is(err, steps.ErrBusy) {
			return err
		}
		return nil
	}
	// 10: unlocks before the stock write.
	orderUnlockFirst = func(ctx context.Context, l steps.Locker, s steps.Shop) error {
		key := s.LockKey()
		ok, err := l.Lock(ctx, key)
		if err != nil || !ok {
			return errors.Join(err, steps.ErrBusy)
		}
		n, err := s.Stock(ctx)
		if err == nil && n > 0 {
			err = s.Work(ctx)
		}
		l.Unlock(context.WithoutCancel(ctx), key) // done with the lock, whatever it says
		if err != nil || n <= 0 {
			return errors.Join(err, steps.ErrSoldOut)
		}
		return s.SetStock(ctx, n-1)
	}
)

// learnerCell is one scenario a learner-style lock is played under, and what the referee must
// find: the violations, or (why) no verdict and its reason.
type learnerCell struct {
	sc   steps.Scenario
	want []steps.Kind
	why  string
}

// learnerCase is one learner-style lock and its handler, with the cells it is judged on.
type learnerCase struct {
	name     string
	new      func(steps.Proc) steps.Locker
	order    func(context.Context, steps.Locker, steps.Shop) error
	cells    []learnerCell
	embedded bool // only the embedded backend has what it needs (Redis 7.0 has no HSETEX)
}

// learnerCases are the ten the audit found judged wrong, and more odd ones.
func learnerCases() []learnerCase {
	ov, os_, fr := steps.Overlap, steps.Oversold, steps.ForeignRelease
	type cell = learnerCell
	return []learnerCase{
		{"1. the lock under a key of its own", newLearner(myKey), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_, fr}, ""}, {steps.UnlockRace, []steps.Kind{fr}, ""},
			{steps.Failover, []steps.Kind{ov, os_}, ""}, {steps.Contention, []steps.Kind{steps.LostSales}, ""}}, false},
		{"1. …and waiting in a back-off", newLearner(myKey, backOff, getThenDel), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}}, false},
		{"2. a client of its own", newLearner(ownClient), orderDefer, []cell{
			{steps.Slow, nil, "use the client the lab gives you"}, {steps.UnlockRace, nil, "use the client the lab gives you"},
			{steps.Pause, nil, "use the client the lab gives you"}, {steps.Failover, nil, "use the client the lab gives you"}}, false},
		{"3. commands sent with the process's context", newLearner(procCtx, getThenDel), orderDefer, []cell{
			{steps.UnlockRace, []steps.Kind{fr}, ""}}, false},
		{"4. the owner checked by a read-only script", newLearner(roScriptThenDel), orderDefer, []cell{
			{steps.UnlockRace, []steps.Kind{fr}, ""}}, false},
		{"5. a peek at the stock before the lock", newLearner(getThenDel), orderPeek, []cell{
			{steps.Contention, []steps.Kind{steps.LostSales}, ""}, {steps.Slow, []steps.Kind{ov, os_}, ""},
			{steps.Restart, []steps.Kind{ov, os_}, ""}, {steps.TwoRequests, nil, ""}, {steps.ClockSkew, nil, ""}}, false},
		{"5. …on a lock with no TTL (step 03's)", newSetNXNoTTL, orderPeek, []cell{
			{steps.Crash, []steps.Kind{steps.Stuck}, ""}, {steps.Pause, nil, ""}, {steps.Partition, nil, ""}}, false},
		{"6. the spin in the handler", newLearner(getThenDel), orderSpin, []cell{
			{steps.Greedy, []steps.Kind{steps.Starved}, ""}}, false},
		{"7. released by PEXPIRE key 1", newLearner(pexpire1), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_, fr}, ""}, {steps.UnlockRace, []steps.Kind{fr}, ""}}, false},
		{"8. a refusal with an error of its own", newLearner(), orderOwnErr, []cell{
			{steps.Load, nil, ""}, {steps.Contention, []steps.Kind{steps.LostSales}, ""}}, false},
		{"9. the lock in a hash field with its own TTL", newLearner(hashField), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_}, ""}, {steps.UnlockRace, []steps.Kind{fr}, ""}}, true},
		{"10. unlocks before the stock write", newLearner(getThenDel, backOff), orderUnlockFirst, []cell{
			{steps.Restart, []steps.Kind{ov, os_}, ""}}, false},
		{"released by SET … PX 1", newLearner(setPX1), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_, fr}, ""}, {steps.UnlockRace, []steps.Kind{fr}, ""}}, false},
		{"released by GETDEL", newLearner(getdel), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_, fr}, ""}, {steps.UnlockRace, []steps.Kind{fr}, ""}}, false},
		{"a lock on two keys", newLearner(twoKeys), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_, fr}, ""}, {steps.Failover, []steps.Kind{ov, os_}, ""}}, false},
		{"an optimistic lock (WATCH, MULTI)", newLearner(watchMulti), orderDefer, []cell{
			{steps.Slow, []steps.Kind{ov, os_}, ""}, {steps.UnlockRace, nil, ""}, {steps.Contention, []steps.Kind{steps.LostSales}, ""}}, false},
		{"a Locker that lies", newLearner(liar), orderDefer, []cell{
			{steps.Contention, []steps.Kind{ov, os_}, ""},
			{steps.UnlockRace, nil, "never called Unlock holding a lock its Lock wrote"},
			{steps.Failover, nil, "found no lock to strike"}}, false},
	}
}

// check says whether rep is what x wants.
func (x learnerCell) check(t *testing.T, backend string, rep *referee.Report) {
	t.Helper()
	want := x.want
	if want == nil {
		want = []steps.Kind{}
	}
	switch {
	case x.why != "":
		if rep.Complete() || !strings.Contains(rep.Why()+rep.Text(), x.why) {
			t.Errorf("%s: want no verdict, saying %q; got\n%s", backend, x.why, rep.Text())
		}
	case !rep.Complete() || !slices.Equal(rep.Violations, want):
		t.Errorf("%s: want %v, got %v (complete %v)\n%s", backend, want, rep.Violations, rep.Complete(), rep.Text())
	}
}

// TestLearnerLocks plays each learner-style lock under the scenarios the first referee got wrong,
// on $LAB_REDIS: the embedded backend, in virtual time and in parallel, by default; CI plays them
// again with LAB_REDIS=server, one after the other on the wall clock.
func TestLearnerLocks(t *testing.T) { playLearners(t, learnerCases()) }

// playLearners plays each case's cells, as TestLearnerLocks says.
func playLearners(t *testing.T, cases []learnerCase) {
	for _, c := range cases {
		for _, x := range c.cells {
			t.Run(c.name+"/"+string(x.sc), func(t *testing.T) {
				if steptest.Virtual() {
					t.Parallel()
				}
				if c.embedded && !steptest.Virtual() {
					t.Skip("needs the embedded backend (a command this Redis may lack)")
				}
				st := &steps.Step{Slug: "learner", New: c.new, Order: c.order}
				steptest.Bubble(t, func(t *testing.T) {
					env := steptest.Env(t, redisenv.Options{})
					rep, _, err := scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, x.sc, scenario.StallTries)
					if err != nil {
						t.Fatal(err)
					}
					x.check(t, env.Backend(), rep)
				})
			})
		}
	}
}

// newSetNXNoTTL is step 03's lock: SETNX with no TTL, DEL to release.
func newSetNXNoTTL(p steps.Proc) steps.Locker {
	return newLearner(func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			return l.rdb.SetNX(ctx, key, l.id, 0).Result()
		}
	})(p)
}
