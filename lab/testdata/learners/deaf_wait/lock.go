package lock

import (
	"context"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

type Locker struct {
	rdb  *redis.Client
	p    steps.Proc
	wait chan struct{}
}

func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, p: p, wait: make(chan struct{})} }

func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	ok, err := l.rdb.SetNX(ctx, key, l.p.ID, l.p.TTL).Result()
	if err == nil && !ok {
		<-l.wait // waits for a release it will never hear of, deaf to ctx
	}
	return ok, err
}

func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, key).Err()
}
