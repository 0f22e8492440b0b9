// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
package lock

import (
	"context"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker takes the lock with one SET NX PX, so the key cannot exist without its TTL, and gives it
// back with DEL. Hazard: DEL does not look at whose lock it deletes; once the TTL has run out under
// a slow holder, its DEL removes the next holder's lock.
type Locker struct {
	rdb *redis.Client
	id  string
	ttl time.Duration
}

// New returns a Locker that stores the process id as the lock's value and leases it for p.TTL.
func New(p steps.Proc) steps.Locker {
	return &Locker{rdb: p.Redis, id: p.ID, ttl: p.TTL}
}

// Lock sets key with its expiry in one command (SET key id NX PX ttl). It never waits: false
// means another process holds it.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.id, l.ttl).Result()
}

// Unlock deletes key, whoever holds it.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, key).Err()
}
