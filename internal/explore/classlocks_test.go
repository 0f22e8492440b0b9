package explore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Learner-style locks of the round-three audit's classes (issue 24), each beside its control:
// the few dozen lines explore needs, copied from internal/scenario's round3_test.go and
// learners_test.go, which live in a test package no other package can import.

// classLock is step 04's lock (SET NX PX, released by DEL) with whatever Lock and Unlock its
// class gives it. Hazard: its owner id is drawn per Locker, so per process, as a learner's would
// be; two Lockers of one process would be two owners.
type classLock struct {
	p    steps.Proc
	rdb  *redis.Client
	id   string
	lock func(l *classLock, ctx context.Context, key string) (bool, error) // nil: SET NX PX once
	free func(l *classLock, ctx context.Context, key string) error
}

// Lock takes key as its class does. Hazard: step 04's, its default, tries once and never waits.
func (l *classLock) Lock(ctx context.Context, key string) (bool, error) {
	if l.lock != nil {
		return l.lock(l, ctx, key)
	}
	return l.rdb.SetNX(ctx, key, l.id, l.p.TTL).Result()
}

// Unlock releases key as its class does. Hazard: step 04's, its default, deletes whoever's lock
// is there.
func (l *classLock) Unlock(ctx context.Context, key string) error { return l.free(l, ctx, key) }

// classStep is a step named slug whose Locker is a classLock with opts applied and whose handler
// is orderDefer. Hazard: it is no step of the catalog; nothing but these tests knows it.
func classStep(slug string, opts ...func(*classLock)) *steps.Step {
	return &steps.Step{Slug: slug, Order: orderDefer, New: func(p steps.Proc) steps.Locker {
		b := make([]byte, 8)
		rand.Read(b)
		l := &classLock{p: p, rdb: p.Redis, id: hex.EncodeToString(b),
			free: func(l *classLock, ctx context.Context, key string) error { return l.rdb.Del(ctx, key).Err() }}
		for _, o := range opts {
			o(l)
		}
		return l
	}}
}

// orderDefer is step 03's handler: lock, defer the unlock, read, work, write. Hazard: the
// deferred Unlock runs with the order's context cut loose from its deadline, and its error joins
// the order's.
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

// backOff sleeps d between a lock's tries, or returns ctx's error once it ends. Hazard: a waiter
// asleep when the lock is released sleeps on (the referee's idle).
func backOff(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// zsetTry is one try of the sorted-set semaphore: in one MULTI, drop the members older than a
// TTL, add l, count. Hazard: it writes into the lock whether or not l gets in.
func zsetTry(l *classLock, ctx context.Context, key string) (alone bool, err error) {
	now := l.p.Now().UnixMilli()
	var card *redis.IntCmd
	_, err = l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(now-l.p.TTL.Milliseconds(), 10))
		p.ZAdd(ctx, key, redis.Z{Score: float64(now), Member: l.id})
		card = p.ZCard(ctx, key)
		return nil
	})
	return err == nil && card.Val() == 1, err
}

// The classes' oddities, each an option of classStep.
var (
	// zsetSemaphore is class 1, waiters that write: a sorted-set semaphore with a limit of one
	// ("Redis in Action"'s): a try that finds the asker not alone takes it out again (ZREM) and
	// tries half a TTL later; released by ZREM. Hazard: a waiter's member is in the lock key
	// for a round trip, so a release can leave the key to it.
	zsetSemaphore = func(l *classLock) {
		l.lock = func(l *classLock, ctx context.Context, key string) (bool, error) {
			for {
				alone, err := zsetTry(l, ctx, key)
				if alone || err != nil {
					return alone, err
				}
				if err := l.rdb.ZRem(ctx, key, l.id).Err(); err != nil {
					return false, err
				}
				if err := backOff(ctx, l.p.TTL/2); err != nil {
					return false, err
				}
			}
		}
		l.free = func(l *classLock, ctx context.Context, key string) error { return l.rdb.ZRem(ctx, key, l.id).Err() }
	}
	// zsetScript is class 1's control: the same semaphore with drop, check and add in one script.
	// Hazard: none of the class's: a waiter changes nothing.
	zsetScript = func(l *classLock) {
		zsetSemaphore(l)
		l.lock = func(l *classLock, ctx context.Context, key string) (bool, error) {
			for {
				now := l.p.Now().UnixMilli()
				n, err := l.rdb.Eval(ctx, `redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2] - ARGV[3])
if redis.call('ZCARD', KEYS[1]) > 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1`, []string{key}, l.id, now, l.p.TTL.Milliseconds()).Int()
				if n == 1 || err != nil {
					return n == 1, err
				}
				if err := backOff(ctx, l.p.TTL/2); err != nil {
					return false, err
				}
			}
		}
	}
	// zsetDelWaiter is class 1 broken: the semaphore whose waiter, not alone, takes itself out
	// by deleting the whole set. Hazard: it deletes the holder's member with its own.
	zsetDelWaiter = func(l *classLock) {
		zsetSemaphore(l)
		l.lock = func(l *classLock, ctx context.Context, key string) (bool, error) {
			for {
				alone, err := zsetTry(l, ctx, key)
				if alone || err != nil {
					return alone, err
				}
				if err := l.rdb.Del(ctx, key).Err(); err != nil {
					return false, err
				}
				if err := backOff(ctx, l.p.TTL/2); err != nil {
					return false, err
				}
			}
		}
	}
	// takeFree is class 3's Lock: it takes the key where it is missing or says "free", in a
	// script, and tries again a quarter TTL later. Hazard: it cannot tell "free" from a missing
	// key, so a release may rewrite rather than delete.
	takeFree = func(l *classLock) {
		l.lock = func(l *classLock, ctx context.Context, key string) (bool, error) {
			for {
				n, err := l.rdb.Eval(ctx, `local v = redis.call('GET', KEYS[1])
if v == false or v == 'free' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`, []string{key}, l.id, l.p.TTL.Milliseconds()).Int()
				if n == 1 || err != nil {
					return n == 1, err
				}
				if err := backOff(ctx, l.p.TTL/4); err != nil {
					return false, err
				}
			}
		}
	}
	// rewriteFree is class 3, a release that rewrites: when the key is the caller's, it sets it
	// to "free" (SET … XX KEEPTTL). Hazard: the key stays, with the rest of its lease.
	rewriteFree = func(l *classLock) {
		l.free = func(l *classLock, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('SET', KEYS[1], 'free', 'XX', 'KEEPTTL') end
return 0`, []string{key}, l.id).Err()
		}
	}
	// scriptDel is class 3's control: when the key is the caller's, it deletes it, in a script.
	// Hazard: none of the class's.
	scriptDel = func(l *classLock) {
		l.free = func(l *classLock, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('DEL', KEYS[1]) end
return 0`, []string{key}, l.id).Err()
		}
	}
	// rewriteFreeBlind is class 3 broken: it rewrites the key to "free" whoever holds it.
	// Hazard: sent after its lease ran out, it frees the next holder's lock.
	rewriteFreeBlind = func(l *classLock) {
		l.free = func(l *classLock, ctx context.Context, key string) error {
			return l.rdb.SetArgs(ctx, key, "free", redis.SetArgs{Mode: "XX", KeepTTL: true}).Err()
		}
	}
	// delBlind is rewriteFreeBlind's control: classLock's own release, DEL whoever holds it.
	// Hazard: the same as rewriteFreeBlind's, which is the point: the two must be judged alike.
	delBlind = func(*classLock) {}
	// goUnlink is class 4, a release from another goroutine of the process: UNLINK from a
	// goroutine, the Unlock returning at once. Hazard: whoever holds the key by the time it
	// lands loses it.
	goUnlink = func(l *classLock) {
		l.free = func(l *classLock, ctx context.Context, key string) error {
			l.p.Go(func(ctx context.Context) { l.rdb.Unlink(ctx, key) })
			return nil
		}
	}
	// goCheckedDel is class 4's control: when the key is the caller's, a script deletes it, sent
	// from a goroutine of the process. Hazard: the Unlock returns before the lock is gone.
	goCheckedDel = func(l *classLock) {
		l.free = func(l *classLock, ctx context.Context, key string) error {
			l.p.Go(func(ctx context.Context) {
				l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, []string{key}, l.id)
			})
			return nil
		}
	}
	// flushdb is class 4 too, a release that names no key: FLUSHDB, "the lock is the only key".
	// Hazard: it deletes whoever's lock is there.
	flushdb = func(l *classLock) {
		l.free = func(l *classLock, ctx context.Context, key string) error { return l.rdb.FlushDB(ctx).Err() }
	}
)
