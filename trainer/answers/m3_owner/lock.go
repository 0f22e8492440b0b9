// Package lock is the answer to module 3's exercise in docs/curriculum.md: module 2's lease lock,
// whose value is a random token of its own, and whose Unlock deletes the key only when it still
// holds that token. The check (GET) and the delete (DEL) are two commands.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker is one process's lock with a lease and an owner token.
type Locker struct {
	rdb   *redis.Client
	owner string
	ttl   time.Duration
}

// New returns the Locker of the process p, with a random owner token: a process name such as
// "buyer-3" may be another machine's too.
func New(p steps.Proc) steps.Locker {
	b := make([]byte, 16)
	rand.Read(b)
	return &Locker{rdb: p.Redis, owner: hex.EncodeToString(b), ttl: p.TTL}
}

// Lock sets key to the token with its expiry in one command. It never waits.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.owner, l.ttl).Result()
}

// Unlock deletes key if it still holds the token.
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
