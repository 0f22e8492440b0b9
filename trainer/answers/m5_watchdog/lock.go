// Package lock is the answer to module 5's exercise in docs/curriculum.md: a spinning lock (step
// 07's: a lease, an owner token, a hold count per process, SET NX again and again until it
// holds) given a watchdog, a goroutine of the process that pushes the lease a TTL ahead every
// TTL/3 while the lock is held.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker is one process's spinning lock with a watchdog.
type Locker struct {
	rdb   *redis.Client
	owner string
	ttl   time.Duration
	spawn func(func(ctx context.Context))

	mu    sync.Mutex    // guards count and stop; never held across a Redis call
	count int           // the process's holds (the articles' ThreadLocal counter)
	stop  chan struct{} // closed to stop the watchdog
	done  chan struct{} // closed once it has stopped
}

// New returns the Locker of the process p, with a random owner token.
func New(p steps.Proc) steps.Locker {
	b := make([]byte, 16)
	rand.Read(b)
	return &Locker{rdb: p.Redis, owner: hex.EncodeToString(b), ttl: p.TTL, spawn: p.Go}
}

// held counts one more hold if the process holds the lock already.
func (l *Locker) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count > 0 {
		l.count++
	}
	return l.count > 0
}

// Lock spins on SET key token NX PX ttl until it holds key or ctx ends, then starts the watchdog.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	for !l.held() {
		ok, err := l.rdb.SetNX(ctx, key, l.owner, l.ttl).Result()
		if err != nil {
			return false, err
		}
		if ok {
			l.mu.Lock()
			l.count = 1
			l.stop, l.done = make(chan struct{}), make(chan struct{})
			l.watch(key, l.stop, l.done)
			l.mu.Unlock()
			return true, nil
		}
	}
	return true, nil
}

// watch renews key every TTL/3 until stop is closed or the process dies.
func (l *Locker) watch(key string, stop, done chan struct{}) {
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
				l.rdb.PExpire(ctx, key, l.ttl)
			}
		}
	})
}

// Unlock gives back one hold; the last stops the watchdog and deletes key if it still holds the
// token (GET, then DEL).
func (l *Locker) Unlock(ctx context.Context, key string) error {
	l.mu.Lock()
	if l.count == 0 {
		l.mu.Unlock()
		return steps.ErrNotOwner
	}
	l.count--
	if l.count > 0 {
		l.mu.Unlock()
		return nil
	}
	close(l.stop)
	done := l.done
	l.mu.Unlock()
	<-done
	v, err := l.rdb.Get(ctx, key).Result()
	if err != nil && err != redis.Nil {
		return err
	}
	if v != l.owner {
		return steps.ErrNotOwner
	}
	return l.rdb.Del(ctx, key).Err()
}
