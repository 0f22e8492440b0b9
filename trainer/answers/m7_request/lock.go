// Package lock is the answer to module 7's exercise in docs/curriculum.md: module 6's lock (step
// 10's back-off, watchdog and atomic unlock) whose owner is the request, not the process. Order
// gives each order a request of its own in its context; the token, the hold count and the
// watchdog belong to the request, so a nested call of the same request re-enters and a second
// request of the same process waits like anyone else.
package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	mrand "math/rand/v2"
	"sync"
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

// renew pushes KEYS[1]'s lease to ARGV[2] ms only if it holds the token ARGV[1]: a request back
// from a pause renews no lock but its own (a bare PEXPIRE would extend the next holder's).
var renew = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0`)

// request is one order: its token, its holds and its watchdog. Go has no ThreadLocal, and a
// goroutine is not a request: the request's context carries it.
type request struct {
	token string
	mu    sync.Mutex    // guards the rest; never held across a Redis call
	holds int           // the request's holds
	stop  chan struct{} // closed to stop the watchdog
	done  chan struct{} // closed once it has stopped
}

type requestKey struct{}

// WithRequest returns ctx carrying a new request with a random token.
func WithRequest(ctx context.Context) context.Context {
	b := make([]byte, 16)
	rand.Read(b)
	return context.WithValue(ctx, requestKey{}, &request{token: hex.EncodeToString(b)})
}

// Order is steps.DefaultOrder (step 03's try/finally handler), each order a request of its own.
func Order(ctx context.Context, l steps.Locker, s steps.Shop) error {
	return steps.DefaultOrder(WithRequest(ctx), l, s)
}

// errNoRequest is Lock's and Unlock's answer to a context WithRequest did not make.
var errNoRequest = errors.New("lock: the context carries no request (use WithRequest)")

// Locker is one process's handle on the lock; what a hold is belongs to each request.
type Locker struct {
	rdb   *redis.Client
	ttl   time.Duration
	spawn func(func(ctx context.Context))
}

// New returns the Locker of the process p.
func New(p steps.Proc) steps.Locker { return &Locker{rdb: p.Redis, ttl: p.TTL, spawn: p.Go} }

// held counts one more hold if the request holds the lock already.
func (r *request) held() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds > 0 {
		r.holds++
	}
	return r.holds > 0
}

// Lock tries SET key token NX PX ttl for the request in ctx, and after a refusal sleeps a pause
// and tries again, for at most 10 × TTL; once it holds key it starts the request's watchdog.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	r, ok := ctx.Value(requestKey{}).(*request)
	if !ok {
		return false, errNoRequest
	}
	giveUp := time.Now().Add(10 * l.ttl)
	for !r.held() {
		ok, err := l.rdb.SetNX(ctx, key, r.token, l.ttl).Result()
		if err != nil {
			return false, err
		}
		if ok {
			r.mu.Lock()
			r.holds = 1
			r.stop, r.done = make(chan struct{}), make(chan struct{})
			l.watch(key, r.token, r.stop, r.done)
			r.mu.Unlock()
			return true, nil
		}
		if time.Now().After(giveUp) {
			return false, nil
		}
		pause := l.ttl/4 + mrand.N(l.ttl/4)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return true, nil
}

// watch renews key every TTL/3, while it holds token, until stop is closed or the process dies.
func (l *Locker) watch(key, token string, stop, done chan struct{}) {
	l.spawn(func(ctx context.Context) {
		defer close(done)
		tick := time.NewTicker(l.ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				renew.Run(ctx, l.rdb, []string{key}, token, l.ttl.Milliseconds())
			}
		}
	})
}

// Unlock gives back one hold of the request in ctx; the last stops its watchdog and deletes key
// if it still holds the request's token, in one script.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	r, ok := ctx.Value(requestKey{}).(*request)
	if !ok {
		return errNoRequest
	}
	r.mu.Lock()
	if r.holds == 0 {
		r.mu.Unlock()
		return steps.ErrNotOwner
	}
	r.holds--
	if r.holds > 0 {
		r.mu.Unlock()
		return nil
	}
	close(r.stop)
	done := r.done
	r.mu.Unlock()
	<-done
	n, err := unlock.Run(ctx, l.rdb, []string{key}, r.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return steps.ErrNotOwner
	}
	return nil
}
