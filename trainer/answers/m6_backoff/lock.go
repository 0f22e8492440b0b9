// Package lock is the answer to module 6's exercise in docs/curriculum.md: module 5's lock with
// step 09's atomic unlock (compare and delete in one Lua script), whose waiters no longer spin:
// a refused try sleeps TTL/4 plus a random 0–TTL/4 before the next, for at most 10 leases.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// unlock deletes KEYS[1] only if it holds the token ARGV[1]: 1 when it did, 0 when not.
var unlock = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0`)

// Locker is one process's lock with a watchdog, an atomic unlock and a back-off.
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

// Lock tries SET key token NX PX ttl, and after a refusal sleeps a pause and tries again, for at
// most 10 × TTL (then it answers false); once it holds key it starts the watchdog.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	giveUp := time.Now().Add(10 * l.ttl)
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
		if time.Now().After(giveUp) {
			return false, nil
		}
		pause := l.ttl/4 + mrand.N(l.ttl/4)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return false, ctx.Err()
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
// token, in one script.
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
	n, err := unlock.Run(ctx, l.rdb, []string{key}, l.owner).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return steps.ErrNotOwner
	}
	return nil
}
