// Package lock is the answer to module 1's exercise in docs/curriculum.md: a first lock, SETNX to
// take it and DEL to give it back. It brings no Order, so lab grade places its orders with
// steps.DefaultOrder, step 03's handler, which unlocks in a defer.
package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker is one process's SETNX lock.
type Locker struct {
	rdb *redis.Client
	id  string
}

// New returns the Locker of the process p: its lock's value is the process's name.
func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, id: p.ID} }

// Lock sets key only if nobody has (SETNX), with no expiry. It never waits.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.id, 0).Result()
}

// Unlock deletes key.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, key).Err()
}
