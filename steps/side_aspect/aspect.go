package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lockstep-lab/lockstep/steps"
)

// ErrLockFailed is WithLock's answer when the lock's retries ran out: 002's
// RedisLockFailException ("redis分布式锁加锁失败", the redis lock could not be taken), which it
// leaves to the caller to make up for.
var ErrLockFailed = errors.New("lock: the redis lock could not be taken: its retries ran out")

// requestIDs is the aspect's map of lock key → request id for one request: 002's RequestIDMap,
// a ThreadLocal<Map<String, String>>. Go has no ThreadLocal (and a goroutine is not a request),
// so the map travels in the request's context, and dies with it.
type requestIDs struct {
	mu  sync.Mutex // the request's goroutines may share its context
	ids map[string]string
}

type requestIDsKey struct{}

func (m *requestIDs) get(key string) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.ids[key]
	return id, ok
}

func (m *requestIDs) set(key, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids[key] = id
}

func (m *requestIDs) remove(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.ids, key)
}

// withOwner is ctx carrying id as its request's owner token, which Lock and Unlock read.
func withOwner(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// WithLock is 002's @RedisLock around-advice (RedisLockAspect.around) as a Go wrapper: it takes
// key, runs fn, and gives key back. The request's map of key → request id rides in ctx (WithLock
// puts one there if it finds none): with no id for key, it takes the lock under a new id (Lock
// tries retryCount times) and keeps the id, or returns ErrLockFailed; with an id, the call is
// nested, and it takes the lock again under that id and goes on whatever Lock answered, as 002
// does ("重入加锁成功", re-entered). fn runs with the id in its context. When fn returns nil,
// WithLock gives the hold back, and forgets the id once that Unlock succeeded for the call that
// took it (002 forgets it when its unLock answers true, which it does only on the last hold).
// Hazard: there is no finally: when fn returns an error, WithLock returns it without unlocking,
// and the lock stays taken — and the watchdog renews a lock nobody will give back. And a failed
// unlock is not reported (002 only logs it): the caller cannot tell the lock was lost.
func WithLock(ctx context.Context, l steps.Locker, key string,
	fn func(ctx context.Context) error) error {
	ids, ok := ctx.Value(requestIDsKey{}).(*requestIDs)
	if !ok {
		ids = &requestIDs{ids: map[string]string{}}
		ctx = context.WithValue(ctx, requestIDsKey{}, ids)
	}
	id, nested := ids.get(key)
	if nested {
		if _, err := l.Lock(withOwner(ctx, id), key); err != nil {
			return err
		}
	} else {
		ctx = WithRequest(ctx) // a fresh request id, as lockAndRetry's UUID
		id, _ = ownerOf(ctx)
		ok, err := l.Lock(ctx, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w (key %s)", ErrLockFailed, key)
		}
		ids.set(key, id)
	}
	ctx = withOwner(ctx, id)
	if err := fn(ctx); err != nil {
		return err
	}
	err := l.Unlock(ctx, key)
	switch {
	case errors.Is(err, steps.ErrNotOwner):
		return nil // 002's unLock answered false: logged, not reported
	case err != nil:
		return err
	}
	if !nested {
		ids.remove(key)
	}
	return nil
}
