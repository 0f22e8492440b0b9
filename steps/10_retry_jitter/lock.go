// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker takes the lock with one SET NX PX holding a random owner token, and deletes it with a Lua
// script that checks the token and deletes in one atomic step. It counts its own holds, so a
// nested Lock by the holder succeeds and only the last Unlock deletes the key; a process that
// finds the key taken tries again after a pause, for a bounded time. While it holds the key, a
// watchdog goroutine renews the TTL. Hazard: a waiter asleep in its pause does not see the lock
// come free, so the lock sits idle while buyers wait; and the hold count belongs to the process,
// so a second request of the same process walks in.
type Locker struct {
	rdb   *redis.Client
	owner string
	ttl   time.Duration
	mu    sync.Mutex // two requests of one process may call at once: mu keeps count whole
	count int        // holds by this process: the articles' ThreadLocal counter
	spawn func(func(ctx context.Context))
	stop  chan struct{} // closed to stop the watchdog
	done  chan struct{} // closed when the watchdog has stopped
}

// New returns a Locker with a fresh random owner token: 16 random bytes, unique to the process,
// as the articles' UUID (a thread id repeats across machines).
func New(p steps.Proc) steps.Locker {
	b := make([]byte, 16)
	rand.Read(b)
	return &Locker{rdb: p.Redis, owner: hex.EncodeToString(b), ttl: p.TTL, spawn: p.Go}
}

// retryBudget is how long Lock keeps trying, in leases: 10 × TTL, about 27 tries at the average
// pause (the article's lockAndRetry gives up after 30).
const retryBudget = 10

// Lock returns true at once if this Locker holds a lock already, counting one more hold (the count
// belongs to the Locker, not to key: like the article's ThreadLocal it assumes one lock per
// process, and a Locker holding one key would say yes for any other); otherwise
// it sets key to the owner token with its expiry in one command (SET key token NX PX ttl), and
// while that fails it sleeps a pause and tries again, for retryBudget leases; then it answers
// false. Once it holds the key it starts the watchdog. Hazard: while a waiter sleeps, the lock can
// come free and stay free; the pause trades Redis's load for the lock's idle time.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count > 0 {
		l.count++
		return true, nil
	}
	giveUp := time.Now().Add(retryBudget * l.ttl)
	for {
		ok, err := l.rdb.SetNX(ctx, key, l.owner, l.ttl).Result()
		if err != nil {
			return false, err
		}
		if ok {
			l.count = 1
			l.watch(key)
			return true, nil
		}
		if time.Now().After(giveUp) {
			return false, nil
		}
		if err := sleep(ctx, l.pause()); err != nil {
			return false, err
		}
	}
}

// pause is the wait between two tries: a fixed quarter TTL plus up to a quarter TTL more at
// random, as the article's fixed time + random range, so waiters that failed together do not all
// try together again.
func (l *Locker) pause() time.Duration {
	return l.ttl/4 + mrand.N(l.ttl/4)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// watch starts the watchdog: every TTL/3 it pushes key's expiry a full TTL ahead (PEXPIRE), until
// the last Unlock stops it or the process dies. Hazard: PEXPIRE does not check the owner, and a
// process that is frozen renews nothing while its lock runs out.
func (l *Locker) watch(key string) {
	stop, done := make(chan struct{}), make(chan struct{})
	l.stop, l.done = stop, done
	l.spawn(func(ctx context.Context) {
		defer close(done)
		tick := time.NewTicker(l.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				// A tick and the stop can both be ready (the tick came while a renewal was on its
				// way): select then picks either at random. Look again, so that no renewal
				// starts once the stop is closed.
				select {
				case <-stop:
					return
				default:
				}
				l.rdb.PExpire(ctx, key, l.ttl)
			}
		}
	})
}

// unwatch stops the watchdog and waits until it has stopped, so no renewal follows the delete.
func (l *Locker) unwatch() {
	if l.stop == nil {
		return
	}
	close(l.stop)
	<-l.done
	l.stop, l.done = nil, nil
}

//go:embed unlock.lua
var unlockLua string

// unlockScript is sent as EVALSHA, and as EVAL the first time a server does not know it.
var unlockScript = redis.NewScript(unlockLua)

// Unlock gives back one hold; without one it touches nothing and returns steps.ErrNotOwner. The
// last one stops the watchdog and runs unlock.lua, which deletes key only if it still holds this
// Locker's token. It returns steps.ErrNotOwner if the key no longer held the token.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return steps.ErrNotOwner
	}
	l.count--
	if l.count > 0 {
		return nil
	}
	l.unwatch()
	deleted, err := unlockScript.Run(ctx, l.rdb, []string{key}, l.owner).Int()
	if err != nil {
		return err
	}
	if deleted == 0 {
		return steps.ErrNotOwner
	}
	return nil
}
