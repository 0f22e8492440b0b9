// Package lock is the answer to module 4's exercise in docs/curriculum.md: module 3's lock, whose
// Unlock compares the token and deletes the key in one Lua script, so no command can come between
// the check and the delete.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// Locker is one process's lock with a lease, an owner token and an atomic unlock.
type Locker struct {
	rdb   *redis.Client
	owner string
	ttl   time.Duration
}

// New returns the Locker of the process p, with a random owner token.
func New(p steps.Proc) steps.Locker {
	b := make([]byte, 16)
	rand.Read(b)
	return &Locker{rdb: p.Redis, owner: hex.EncodeToString(b), ttl: p.TTL}
}

// Lock sets key to the token with its expiry in one command. It never waits.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.owner, l.ttl).Result()
}

// Unlock compares and deletes in one script.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	n, err := unlock.Run(ctx, l.rdb, []string{key}, l.owner).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return steps.ErrNotOwner
	}
	return nil
}
