package lock

import (
	"context"
	"sync"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// holds counts, per key, how deep this program holds each lock: a reentrant lock kept as Java
// keeps it in a static map. Every Locker of the program shares it.
var (
	mu    sync.Mutex
	holds = map[string]int{}
)

// Locker is step 04's SET NX PX lock, reentrant through the package's map.
type Locker struct {
	rdb *redis.Client
	p   steps.Proc
}

func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, p: p} }

func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	mu.Lock()
	n := holds[key]
	mu.Unlock()
	if n > 0 {
		mu.Lock()
		holds[key]++
		mu.Unlock()
		return true, nil
	}
	ok, err := l.rdb.SetNX(ctx, key, l.p.ID, l.p.TTL).Result()
	if ok {
		mu.Lock()
		holds[key] = 1
		mu.Unlock()
	}
	return ok, err
}

func (l *Locker) Unlock(ctx context.Context, key string) error {
	mu.Lock()
	holds[key]--
	n := holds[key]
	mu.Unlock()
	if n > 0 {
		return nil
	}
	return l.rdb.Del(ctx, key).Err()
}
