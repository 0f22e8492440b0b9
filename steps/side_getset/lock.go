// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
package lock

import (
	"context"
	"strconv"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker is article 002's "double anti-deadlock" lock: the lock's value is the time it expires,
// by the clock of the client that took it, and a client that finds it past that time takes it over
// with GETSET. The key also gets a TTL, set by a second command. Hazard: whether a lock has
// expired is decided by the asking client's clock; a client whose clock runs ahead takes over a
// lock that is still held, and every client's clock is trusted with everyone's lock.
type Locker struct {
	rdb *redis.Client
	ttl time.Duration
	now func() time.Time // this process's wall clock
}

// New returns a Locker that reads the time from p's own clock.
func New(p steps.Proc) steps.Locker {
	now := p.Now
	if now == nil {
		now = time.Now
	}
	return &Locker{rdb: p.Redis, ttl: p.TTL, now: now}
}

// Lock follows 002's steps. SETNX key (now + TTL + 1 ms): if it sets the key, the lock is ours,
// and EXPIRE gives it a TTL. Otherwise GET the stored time; if it is past by this client's clock,
// the holder's time is up: GETSET the key to our own time, and if the value we replaced is the one
// we read (or there was none), no other client took it over first, and the lock is ours. It never
// waits: false means another client holds it, by this client's clock.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	expires := strconv.FormatInt(l.now().Add(l.ttl).UnixMilli()+1, 10)
	ok, err := l.rdb.SetNX(ctx, key, expires, 0).Result()
	if err != nil {
		return false, err
	}
	if ok {
		return true, l.rdb.PExpire(ctx, key, l.ttl).Err()
	}
	current, err := l.rdb.Get(ctx, key).Result()
	if err == redis.Nil {
		return false, nil // released in between: this try fails, as the article's does
	}
	if err != nil {
		return false, err
	}
	if at, err := strconv.ParseInt(current, 10, 64); err != nil || at >= l.now().UnixMilli() {
		return false, err // still held, by this client's clock
	}
	old, err := l.rdb.GetSet(ctx, key, expires).Result()
	switch {
	case err == redis.Nil, err == nil && old == current:
		return true, l.rdb.PExpire(ctx, key, l.ttl).Err()
	case err != nil:
		return false, err
	}
	return false, nil // another client took it over first (and we have moved its time)
}

// Unlock deletes key, whoever holds it.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, key).Err()
}
