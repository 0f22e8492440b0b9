package scenario_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// The third round's learner-style locks (issue 24), each beside a control that differs in the one
// way that matters, played as TestLearnerLocks plays its own.

var (
	// the lock under `lock:` + the key Lock is given: outside the run's keys.
	outsideKey = func(l *learner) { l.key = func(k string) string { return "lock:" + k } }
	// taken where the key is missing or says "free", by a script.
	takeFree = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			for {
				n, err := l.rdb.Eval(ctx, `local v = redis.call('GET', KEYS[1])
if v == false or v == 'free' then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`, []string{key}, l.id, l.p.TTL.Milliseconds()).Int()
				if n == 1 || err != nil {
					return n == 1, err
				}
				select {
				case <-time.After(l.p.TTL / 4):
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
		}
	}
	// released, when it is the caller's, by rewriting it to "free" (SET … XX KEEPTTL).
	rewriteFree = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('SET', KEYS[1], 'free', 'XX', 'KEEPTTL') end
return 0`, []string{key}, l.id).Err()
		}
	}
	// a sorted-set semaphore with a limit of one ("Redis in Action"'s): each try drops the
	// members older than a TTL, adds the asker, and is in when it is alone; else it takes itself
	// out again and tries later. Released by ZREM.
	zsetSemaphore = func(l *learner) {
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			for {
				now := l.p.Now().UnixMilli()
				var card *redis.IntCmd
				_, err := l.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.ZRemRangeByScore(ctx, key, "-inf", strconv.FormatInt(now-l.p.TTL.Milliseconds(), 10))
					p.ZAdd(ctx, key, redis.Z{Score: float64(now), Member: l.id})
					card = p.ZCard(ctx, key)
					return nil
				})
				if err != nil {
					return false, err
				}
				if card.Val() == 1 {
					return true, nil
				}
				if err := l.rdb.ZRem(ctx, key, l.id).Err(); err != nil {
					return false, err
				}
				select {
				case <-time.After(l.p.TTL / 2):
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
		}
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.ZRem(ctx, key, l.id).Err() }
	}
	// the same semaphore with drop, check and add in one script: a waiter changes nothing.
	zsetScript = func(l *learner) {
		zsetSemaphore(l)
		l.lock = func(l *learner, ctx context.Context, key string) (bool, error) {
			for {
				now := l.p.Now().UnixMilli()
				n, err := l.rdb.Eval(ctx, `redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2] - ARGV[3])
if redis.call('ZCARD', KEYS[1]) > 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1`, []string{key}, l.id, now, l.p.TTL.Milliseconds()).Int()
				if n == 1 || err != nil {
					return n == 1, err
				}
				select {
				case <-time.After(l.p.TTL / 2):
				case <-ctx.Done():
					return false, ctx.Err()
				}
			}
		}
	}
	// released by UNLINK from a goroutine of its process, the Unlock returning at once.
	goUnlink = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			l.p.Go(func(ctx context.Context) { l.rdb.Unlink(ctx, key) })
			return nil
		}
	}
	// released, when it is the caller's, by a script sent from a goroutine of its process.
	goCheckedDel = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			l.p.Go(func(ctx context.Context) {
				l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, []string{key}, l.id)
			})
			return nil
		}
	}
	// released by FLUSHDB: "the lock is the only key".
	flushdb = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error { return l.rdb.FlushDB(ctx).Err() }
	}
	// released, when it is the caller's, by DEL, in a script.
	scriptDel = func(l *learner) {
		l.free = func(l *learner, ctx context.Context, key string) error {
			return l.rdb.Eval(ctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then
return redis.call('DEL', KEYS[1]) end
return 0`, []string{key}, l.id).Err()
		}
	}
)

// round3Cases are the classes of issue 24, with their controls.
func round3Cases() []learnerCase {
	type cell = learnerCell
	outside := "your Lock wrote `lock:lockstep:…:lock:product:1001`, outside the run's keys; lock the key Lock is given"
	return []learnerCase{
		// a fault that found nowhere to strike is '?', never ✓; the key outside is named
		{"7. a back-off lock outside the run's keys", newLearner(outsideKey, backOff, getThenDel), orderDefer, []cell{
			{steps.Load, nil, outside}, {steps.Greedy, nil, "the greedy buyer's head start found nowhere to strike: " + outside},
			{steps.UnlockRace, nil, "the unlock-race found nowhere to strike: " + outside},
			{steps.Failover, nil, "the failover found no lock to strike: " + outside},
			{steps.Slow, nil, outside}}, false},
		{"7. …the control: the same lock on the key it is given", newLearner(backOff, getThenDel), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.Greedy, []steps.Kind{steps.Starved}, ""},
			{steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, ""}}, false},
		// a release is the holder's command after which the next Lock can succeed
		{"3. an owner-checked back-off lock released by a rewrite to \"free\"", newLearner(takeFree, rewriteFree), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.UnlockRace, nil, ""}, {steps.Contention, nil, ""}}, false},
		{"3. …the control: released by DEL", newLearner(takeFree, scriptDel), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.UnlockRace, nil, ""}, {steps.Contention, nil, ""}}, false},
		// unlock-race strikes before any command of the holder's Unlock, or sent on its behalf from
		// a goroutine of its process during or right after it, that changes the lock's keys
		{"4. released by UNLINK from a goroutine of its process", newLearner(goUnlink), orderDefer, []cell{
			{steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, ""}}, false},
		{"4. …the control: an owner-checked script from a goroutine", newLearner(goCheckedDel), orderDefer, []cell{
			{steps.UnlockRace, nil, ""}}, false},
		{"4. released by FLUSHDB", newLearner(flushdb), orderDefer, []cell{
			{steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, ""}}, false},
		// a waiter is an order whose Lock has not been granted, whatever it read before
		{"7. a back-off lock whose handler reads the stock before Lock, under load", newLearner(backOff), orderStaleRead, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}}, false},
		{"7. …the control: the same lock, the read under it", newLearner(backOff), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}}, false},
		{"7. a handler whose refusal is no error, under load", newLearner(), orderRefusalNil, []cell{
			{steps.Load, nil, ""}}, false},
		{"7. …the control: the refusal as ErrBusy", newLearner(), orderDefer, []cell{
			{steps.Load, nil, ""}}, false},
		{"a Locker that lies, under load", newLearner(liar), orderDefer, []cell{
			{steps.Load, nil, "none wrote a key of the run"}, {steps.Greedy, nil, "never released a lock its Lock wrote"}}, false},
	}
}

// semaphores are class 1 and 2 of issue 24, with their control.
func semaphores() []learnerCase {
	type cell = learnerCell
	return []learnerCase{
		// a waiter is anyone whose Lock is refused or waits, whatever it wrote; a hold ends when its
		// holder or a stranger removes its claim, not when a waiter writes
		// (not under greedy: its second waiter comes as the greedy buyer's first order releases,
		// and a semaphore's waiter that is in the set then turns the greedy retry away — on the
		// wall clock, as the scheduler has it)
		{"1. a sorted-set semaphore whose waiters add and remove themselves", newLearner(zsetSemaphore), orderDefer, []cell{
			{steps.Contention, nil, ""}, {steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.UnlockRace, nil, ""}}, false},
		{"1. …the control: drop, check and add in one script", newLearner(zsetScript), orderDefer, []cell{
			{steps.Contention, nil, ""}, {steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.Greedy, []steps.Kind{steps.Starved}, ""},
			{steps.UnlockRace, nil, ""}}, false},
	}
}

// TestLearnerLocksRoundThree plays issue 24's learner-style locks and their controls.
func TestLearnerLocksRoundThree(t *testing.T) { playLearners(t, round3Cases()) }

// TestSemaphores plays the sorted-set semaphores. Their lease is a score on the clients' clocks,
// one TTL, with no renewal: contention's hold ends within three quarters of it (HoldAtMost), so
// on real Redis too the overlap is none the scheduler can stage (10 of 10 server runs with two
// burners; before that cap, 1 of 3 overlapped at load average 20).
func TestSemaphores(t *testing.T) {
	playLearners(t, semaphores())
}

// TestSoonReleasesUnderLoad plays the releases that leave the key to expire within a round trip,
// under load. On the wall clock a buyer whose SET NX the still-living key refused can end its
// order just after the key ran out: it gave up in the gap, and is not one that waited across it.
func TestSoonReleasesUnderLoad(t *testing.T) {
	type cell = learnerCell
	playLearners(t, []learnerCase{
		{"7. released by PEXPIRE key 1, under load", newLearner(pexpire1), orderDefer, []cell{{steps.Load, nil, ""}}, false},
		{"7. released by SET … PX 1, under load", newLearner(setPX1), orderDefer, []cell{{steps.Load, nil, ""}}, false},
		{"7. …the control: released by DEL, under load", newLearner(), orderDefer, []cell{{steps.Load, nil, ""}}, false},
	})
}
