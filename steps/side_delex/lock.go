// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
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

// Locker takes the lock with one SET NX PX holding a random owner token, and deletes it with one
// command that checks the token and deletes in one atomic step (DELEX key IFEQ token). It counts
// its own holds, so a nested Lock by the holder succeeds and only the last Unlock deletes the key;
// a process that finds the key taken spins until it is free. While it holds the key, a watchdog
// goroutine renews the TTL. Hazard: all of it lives on one Redis; a failover to a replica that
// never saw the lock hands it to a second process, and a frozen process renews nothing while its
// lease runs out. And DELEX is new (Redis 8.4, Valkey 9.2): an older server refuses it.
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

// Needs is what this road asks of the server beyond step 09's commands: DELEX, which Redis 8.4 and
// Valkey 9.2 run and older servers refuse with an error. The catalog hands it to the lab
// (steps.Step.Needs), which does not play a run on a server without it: its releases would all be
// refused, and the run would judge a lock that never unlocks.
var Needs = []steps.Need{{Command: "DELEX", Since: "Redis ≥ 8.4 or Valkey ≥ 9.2"}}

// New returns a Locker with a fresh random owner token: 16 random bytes, unique to the process,
// as the articles' UUID (a thread id repeats across machines).
func New(p steps.Proc) steps.Locker {
	b := make([]byte, 16)
	rand.Read(b)
	return &Locker{rdb: p.Redis, owner: hex.EncodeToString(b), ttl: p.TTL, spawn: p.Go}
}

// Lock returns true at once if this Locker holds a lock already, counting one more hold (the count
// belongs to the Locker, not to key: like the article's ThreadLocal it assumes one lock per
// process, and a Locker holding one key would say yes for any other); otherwise
// it sets key to the owner token with its expiry in one command (SET key token NX PX ttl), again
// and again with no pause, until it succeeds or ctx ends, and then starts the watchdog. Hazard:
// every waiting process sends commands as fast as its network allows, all the time the lock is
// held.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count > 0 {
		l.count++
		return true, nil
	}
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

// Unlock gives back one hold; without one it touches nothing and returns steps.ErrNotOwner. The
// last one stops the watchdog and sends DELEX key IFEQ token, which deletes key only if it still
// holds this Locker's token, in one command. It returns steps.ErrNotOwner when DELEX deleted
// nothing. Hazard: DELEX answers 0 both when another process holds key and when key is gone (its
// lease ran out and nobody took it): "not yours" and "already gone" look alike.
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
	deleted, err := l.rdb.DelExArgs(ctx, key,
		redis.DelExArgs{Mode: "IFEQ", MatchValue: l.owner}).Result()
	if err != nil {
		return err
	}
	if deleted == 0 {
		return steps.ErrNotOwner
	}
	return nil
}
