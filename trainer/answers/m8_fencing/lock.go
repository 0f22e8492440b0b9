// Package lock is the answer to module 8's exercise in docs/curriculum.md: module 2's lease lock
// (SET NX PX, DEL), each acquisition taking a fencing token from a counter beside the lock, and
// an Order that shows the token to the inventory with its read and its write: the inventory
// refuses a token lower than the highest it has seen (steps.ErrFenced).
package lock

import (
	"context"
	"errors"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// lock sets KEYS[1] to ARGV[1] for ARGV[2] ms if nobody holds it, and then takes the next number of
// the counter KEYS[2]: the token (0 when the lock was taken).
var lock = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2])
end
return 0`)

// Locker is one process's lease lock with fencing tokens.
type Locker struct {
	rdb *redis.Client
	id  string
	ttl time.Duration
}

// New returns the Locker of the process p.
func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, id: p.ID, ttl: p.TTL} }

type tokenKey struct{}

// Lock takes key and its token in one script, and puts the token where the Order finds it. It
// never waits.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	keys := []string{key, key + ":fence"}
	n, err := lock.Run(ctx, l.rdb, keys, l.id, l.ttl.Milliseconds()).Int64()
	if err != nil || n == 0 {
		return false, err
	}
	if t, ok := ctx.Value(tokenKey{}).(*int64); ok {
		*t = n
	}
	return true, nil
}

// Unlock deletes key.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	return l.rdb.Del(ctx, key).Err()
}

// Order is step 03's try/finally handler, its stock read and write fenced by the lock's token.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) (err error) {
	token := new(int64)
	ctx = context.WithValue(ctx, tokenKey{}, token)
	key := s.LockKey()
	ok, err := l.Lock(ctx, key)
	if err != nil {
		return err
	}
	if !ok {
		return steps.ErrBusy
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = errors.Join(err, l.Unlock(uctx, key))
	}()
	stock, err := s.StockFenced(ctx, *token)
	if err != nil {
		return err
	}
	if stock <= 0 {
		return steps.ErrSoldOut
	}
	if err := s.Work(ctx); err != nil {
		return err
	}
	return s.SetStockFenced(ctx, stock-1, *token)
}
