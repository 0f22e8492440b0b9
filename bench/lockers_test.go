package bench

import (
	"context"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockstep-lab/lockstep/steps"
	step04 "github.com/lockstep-lab/lockstep/steps/04_atomic_ttl"
	step05 "github.com/lockstep-lab/lockstep/steps/05_owner"
	step06 "github.com/lockstep-lab/lockstep/steps/06_reentrant"
	step07 "github.com/lockstep-lab/lockstep/steps/07_spin"
	step08 "github.com/lockstep-lab/lockstep/steps/08_watchdog"
	step09 "github.com/lockstep-lab/lockstep/steps/09_lua_unlock"
)

// contender is one lock implementation under benchmark, seen through the lab's steps.Locker.
type contender struct {
	name string
	// blocking: Lock waits inside until it holds the key (07–09, redislock with a retry strategy,
	// redsync with its retries). Otherwise (04–06) Lock answers false at once when the key is taken
	// and the harness retries after retrySleep.
	blocking bool
	new      func(steps.Proc) steps.Locker
}

// contenders are every step from the first with a TTL set atomically (04) to the last single-node
// step (09), then the two peers. Steps 01–03 are left out: 01/02 have no TTL in the same command
// and 03 differs from 02 only in its caller.
var contenders = []contender{
	{"lockstep-04_atomic_ttl", false, step04.New},
	{"lockstep-05_owner", false, step05.New},
	{"lockstep-06_reentrant", false, step06.New},
	{"lockstep-07_spin", true, step07.New},
	{"lockstep-08_watchdog", true, step08.New},
	{"lockstep-09_lua_unlock", true, step09.New},
	{"redislock", true, newRedislock},
	{"redsync", true, newRedsync},
}

// peerBackoff is redislock's retry pause (redislock.LinearBackoff): the same pause the harness
// sleeps between tries of the non-blocking steps 04–06, so the two polling designs compare.
const peerBackoff = time.Millisecond

// redislockLocker adapts github.com/bsm/redislock to steps.Locker: Obtain (a Lua script: SET NX
// with the token, sent as EVALSHA) retried every peerBackoff until the ctx deadline, and
// Release (a Lua GET-compare-DEL, EVALSHA).
type redislockLocker struct {
	c    *redislock.Client
	ttl  time.Duration
	opt  *redislock.Options
	held *redislock.Lock
}

func newRedislock(p steps.Proc) steps.Locker {
	return &redislockLocker{
		c:   redislock.New(p.Redis),
		ttl: p.TTL,
		opt: &redislock.Options{RetryStrategy: redislock.LinearBackoff(peerBackoff)},
	}
}

func (l *redislockLocker) Lock(ctx context.Context, key string) (bool, error) {
	lk, err := l.c.Obtain(ctx, key, l.ttl, l.opt)
	if errors.Is(err, redislock.ErrNotObtained) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	l.held = lk
	return true, nil
}

func (l *redislockLocker) Unlock(ctx context.Context, key string) error {
	if l.held == nil {
		return steps.ErrNotOwner
	}
	lk := l.held
	l.held = nil
	if err := lk.Release(ctx); err != nil {
		if errors.Is(err, redislock.ErrLockNotHeld) {
			return steps.ErrNotOwner
		}
		return err
	}
	return nil
}

// redsyncLocker adapts github.com/go-redsync/redsync/v4 with one pool (goredis v9 on the process's
// client) to steps.Locker: Mutex.LockContext (SET NX PX, with its default 32 tries 50–250 ms
// apart) and UnlockContext (a Lua GET-compare-DEL, EVALSHA). A failed try also sends that release
// script, as redsync does.
type redsyncLocker struct {
	rs  *redsync.Redsync
	ttl time.Duration
	m   *redsync.Mutex
}

func newRedsync(p steps.Proc) steps.Locker {
	return &redsyncLocker{rs: redsync.New(redsyncgoredis.NewPool(p.Redis)), ttl: p.TTL}
}

func (l *redsyncLocker) Lock(ctx context.Context, key string) (bool, error) {
	if l.m == nil || l.m.Name() != key {
		l.m = l.rs.NewMutex(key, redsync.WithExpiry(l.ttl))
	}
	err := l.m.LockContext(ctx)
	// After its last try redsync returns ErrFailed, or that try's error: *ErrTaken when a majority
	// of nodes hold the key, or *ErrNodeTaken joined with the other nodes' answers. A node that
	// could not be reached (*RedisError) is an error of the benchmark, never a busy lock.
	var (
		broken    *redsync.RedisError
		taken     *redsync.ErrTaken
		nodeTaken *redsync.ErrNodeTaken
	)
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &broken):
		return false, err
	case errors.Is(err, redsync.ErrFailed), errors.As(err, &taken), errors.As(err, &nodeTaken):
		return false, ctx.Err()
	}
	return false, err
}

func (l *redsyncLocker) Unlock(ctx context.Context, key string) error {
	if l.m == nil {
		return steps.ErrNotOwner
	}
	ok, err := l.m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return steps.ErrNotOwner
	}
	return nil
}
