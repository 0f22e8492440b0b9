package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker is step 04's SET NX PX lock released with FLUSHDB: "the lock is the only key, so empty
// the database". On a server that is not the lab's it would wipe the user's keys.
type Locker struct {
	rdb *redis.Client
	p   steps.Proc
}

func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, p: p} }

func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	return l.rdb.SetNX(ctx, key, l.p.ID, l.p.TTL).Result()
}

func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.FlushDB(ctx).Err()
}
