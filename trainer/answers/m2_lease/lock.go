// Package lock is the answer to module 2's exercise in docs/curriculum.md: module 1's SETNX lock,
// given a lease that Redis enforces on its own, set in the same command as the lock (SET NX PX),
// so that a crashed holder's lock goes away by itself.
package lock

import (
	"context"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker is one process's lock with a lease.
type Locker struct {
	rdb *redis.Client
	id  string
	ttl time.Duration
}

// New returns the Locker of the process p, leasing its lock for p.TTL.
func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, id: p.ID, ttl: p.TTL} }

// Lock sets key and its expiry in one command: SET key id NX PX ttl. It never waits.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.id, l.ttl).Result()
}

// Unlock deletes key.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, key).Err()
}
