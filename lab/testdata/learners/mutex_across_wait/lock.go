package lock

import (
	"context"
	"sync"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

type Locker struct {
	mu  sync.Mutex
	rdb *redis.Client
	p   steps.Proc
}

func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, p: p} }

func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	l.mu.Lock() // one request of this process at a time: held until Unlock
	ok, err := l.rdb.SetNX(ctx, key, l.p.ID, l.p.TTL).Result()
	if !ok || err != nil {
		l.mu.Unlock()
	}
	return ok, err
}

func (l *Locker) Unlock(ctx context.Context, key string) error {
	defer l.mu.Unlock()
	return l.rdb.Del(ctx, key).Err()
}
