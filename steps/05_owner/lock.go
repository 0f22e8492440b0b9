// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker takes the lock with one SET NX PX holding a random owner token, and deletes it only if
// the key still holds that token. Hazard: the check (GET) and the delete (DEL) are two commands; if
// the lock expires between them and another process takes it, the DEL removes that process's lock.
type Locker struct {
	rdb   *redis.Client
	owner string
	ttl   time.Duration
}

// New returns a Locker with a fresh random owner token: 16 random bytes, unique to the process,
// as the articles' UUID (a thread id repeats across machines).
func New(p steps.Proc) steps.Locker {
	b := make([]byte, 16)
	rand.Read(b)
	return &Locker{rdb: p.Redis, owner: hex.EncodeToString(b), ttl: p.TTL}
}

// Lock sets key to the owner token with its expiry in one command (SET key token NX PX ttl). It
// never waits: false means another process holds it.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.owner, l.ttl).Result()
}

// Unlock deletes key if it still holds this Locker's token, and returns steps.ErrNotOwner
// otherwise (the lock expired, or another process holds it now).
func (l *Locker) Unlock(ctx context.Context, key string) error {
	v, err := l.rdb.Get(ctx, key).Result()
	if err != nil && err != redis.Nil {
		return err
	}
	if v != l.owner {
		return steps.ErrNotOwner
	}
	return l.rdb.Del(ctx, key).Err()
}
