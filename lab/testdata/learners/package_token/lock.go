package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// owner is this program's token, drawn once when the package is loaded: every Locker of the
// program writes and checks the same one.
var owner = token()

func token() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var unlock = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// Locker is step 09's lock (SET NX PX, a compare-and-delete script), its owner the package's.
type Locker struct {
	rdb *redis.Client
	p   steps.Proc
}

func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, p: p} }

func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	for {
		ok, err := l.rdb.SetNX(ctx, key, owner, l.p.TTL).Result()
		if ok || err != nil {
			return ok, err
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
	}
}

func (l *Locker) Unlock(ctx context.Context, key string) error {
	return unlock.Run(ctx, l.rdb, []string{key}, owner).Err()
}
