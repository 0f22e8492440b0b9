// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker keeps the lock as a Redis hash of owner → holds, in Lua scripts that check the owner to
// lock, unlock and renew. The owner is the request, not the process: a token carried in the
// request's context (WithRequest), so a nested call in the same request re-enters and another
// request of the same process waits like anyone else. A request that finds the lock taken tries
// again after a pause, a bounded number of times; while a request holds the lock, a watchdog
// goroutine renews its lease. Hazard: the watchdog keeps the lease of a request that can no
// longer prove it holds the lock (cut off from Redis, say) working on regardless: the lease runs
// out under it.
type Locker struct {
	rdb   *redis.Client
	ttl   time.Duration
	spawn func(func(ctx context.Context))
	mu    sync.Mutex           // guards dogs: requests of one process lock and unlock at once
	dogs  map[string]*watchdog // the watchdog of each request that holds a lock, by owner token
}

// watchdog is one request's lease renewal.
type watchdog struct {
	stop chan struct{} // closed to stop it
	done chan struct{} // closed when it has stopped
}

// New returns a Locker for the process p.
func New(p steps.Proc) steps.Locker {
	return &Locker{rdb: p.Redis, ttl: p.TTL, spawn: p.Go, dogs: map[string]*watchdog{}}
}

type requestKey struct{}

// WithRequest returns ctx carrying a fresh owner token for one request: 16 random bytes, as the
// articles' UUID. Lock and Unlock read it there. Go has no ThreadLocal, and a goroutine is not a
// request anyway; the request's context is what travels with the request.
func WithRequest(ctx context.Context) context.Context {
	b := make([]byte, 16)
	rand.Read(b)
	return context.WithValue(ctx, requestKey{}, hex.EncodeToString(b))
}

// ErrNoRequest is Lock's and Unlock's answer to a context WithRequest did not make.
var ErrNoRequest = errors.New("lock: the context carries no request (use WithRequest)")

func ownerOf(ctx context.Context) (string, error) {
	owner, ok := ctx.Value(requestKey{}).(string)
	if !ok {
		return "", ErrNoRequest
	}
	return owner, nil
}

var (
	//go:embed lock.lua
	lockLua    string
	lockScript = redis.NewScript(lockLua)
	//go:embed unlock.lua
	unlockLua    string
	unlockScript = redis.NewScript(unlockLua)
	//go:embed renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)
)

// retryCount is how many times Lock tries: the @RedisLock annotation's retryCount, 30 tries
// ("大约3s", about 3 s of 100–110 ms pauses) against its expireTime, a 10 s lease.
const retryCount = 30

// Lock takes key for the request in ctx with lock.lua: at once if the lock is free or already the
// request's (one more hold), and otherwise, while another request holds it, it sleeps a pause and
// tries again, retryCount tries in all (002's lockAndRetry: it sleeps after the last try too);
// then it answers false. The request's first hold starts its watchdog. Hazard: the tries last
// about 0.3 × TTL, so a waiter gives up on any holder that holds the lock longer than that.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	owner, err := ownerOf(ctx)
	if err != nil {
		return false, err
	}
	for range retryCount {
		r, err := lockScript.Run(ctx, l.rdb, []string{key}, owner,
			l.ttl.Milliseconds()).Int64Slice()
		if err != nil {
			return false, err
		}
		if r[0] == 1 {
			if r[1] == 1 {
				l.watch(key, owner)
			}
			return true, nil
		}
		if err := sleep(ctx, l.pause()); err != nil {
			return false, err
		}
	}
	return false, nil
}

// pause is the wait between two tries: 002's fixed 100 ms plus up to 10 ms more at random, in
// units of the annotation's 10 s lease (TTL/100 + up to TTL/1000), so waiters that failed
// together do not all try together again.
func (l *Locker) pause() time.Duration {
	return l.ttl/100 + mrand.N(l.ttl/1000)
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

// watch starts the request's watchdog: every TTL/3 it renews the lease with renew.lua, which
// extends it only while the request still holds the lock; it stops when the request's last Unlock
// stops it, when the lock is no longer the request's, or when the process dies. Hazard: a renewal
// that cannot reach Redis is simply missed, and the request works on.
func (l *Locker) watch(key, owner string) {
	d := &watchdog{stop: make(chan struct{}), done: make(chan struct{})}
	l.mu.Lock()
	l.dogs[owner] = d
	l.mu.Unlock()
	l.spawn(func(ctx context.Context) {
		defer close(d.done)
		tick := time.NewTicker(l.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				// A tick and the stop can both be ready (the tick came while a renewal was on its
				// way): select then picks either at random. Look again, so that no renewal
				// starts once the stop is closed.
				select {
				case <-d.stop:
					return
				default:
				}
				n, err := renewScript.Run(ctx, l.rdb, []string{key}, owner,
					l.ttl.Milliseconds()).Int()
				if err == nil && n == 0 {
					return // the lock is not the request's any more: nothing left to renew
				}
			}
		}
	})
}

// unwatch stops the request's watchdog and waits until it has stopped.
func (l *Locker) unwatch(owner string) {
	l.mu.Lock()
	d := l.dogs[owner]
	delete(l.dogs, owner)
	l.mu.Unlock()
	if d == nil {
		return
	}
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	<-d.done
}

// Unlock gives back one hold of the request in ctx with unlock.lua. The last one deletes the lock
// and stops the request's watchdog. It returns steps.ErrNotOwner, and stops the watchdog, when the
// lock is not the request's any more; an error from Redis stops the watchdog too, since a lock it
// cannot give back is left to its lease.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	owner, err := ownerOf(ctx)
	if err != nil {
		return err
	}
	left, err := unlockScript.Run(ctx, l.rdb, []string{key}, owner).Int64()
	switch {
	case err != nil:
		l.unwatch(owner)
		return err
	case left < 0:
		l.unwatch(owner)
		return steps.ErrNotOwner
	case left == 0:
		l.unwatch(owner)
	}
	return nil
}
