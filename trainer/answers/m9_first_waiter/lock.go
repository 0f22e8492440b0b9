// Package lock is the answer to module 9's exercise in docs/curriculum.md: step 13 (pub/sub), made
// to wake only the first waiter. Waiters join a line in Redis, first come first; the release is
// told to the first in line only, on a channel of its own; a waiter that gives up leaves the line,
// and one that stops asking (it died) is dropped from it. diff -ru -x README.md -x idea_test.go -x
// source.go -x lock_test.go steps/13_pubsub docs/trainer/answers/m9_first_waiter shows the change.
package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker keeps the lock as a Redis hash of owner → holds, in Lua scripts that check the owner to
// lock, unlock and renew. The owner is the request, not the process: a token carried in the
// request's context (WithRequest), so a nested call in the same request re-enters and another
// request of the same process waits like anyone else. A request that finds the lock taken joins
// the line of waiters, subscribes to its own turn channel and sleeps until the unlock tells it
// its turn has come, or until it could have, for a bounded time. While a request holds the lock,
// a lease guard renews it every TTL/3 and, when it can no longer prove the lease (a renewal
// refused, or none answered before the lease could have run out), ends the request's context, so
// the request stops before another holder can be inside. Hazard: a check only helps before the
// write leaves; a process paused after its last check writes anyway, and only the resource can
// refuse that write.
type Locker struct {
	rdb    *redis.Client
	ttl    time.Duration
	life   context.Context     // the process's: its leases stop with it
	mu     sync.Mutex          // guards leases and the clock (one process, many requests)
	leases map[*request]*lease // the lease of each request that holds a lock
	clock  *time.Timer         // the one timer of all the process's leases; nil until the first
	rings  time.Time           // when the clock is armed for; zero when it is not
}

// New returns a Locker for the process p.
func New(p steps.Proc) steps.Locker {
	life := p.Ctx
	if life == nil {
		life = context.Background() // a Proc made by hand, not by a process
	}
	return &Locker{rdb: p.Redis, ttl: p.TTL, life: life, leases: map[*request]*lease{}}
}

// request is one request: its owner token, and the end of its context.
type request struct {
	owner  string
	cancel context.CancelCauseFunc
}

type requestKey struct{}

// ErrLeaseLost is the cause a request's context ends with when its lock can no longer prove its
// lease: the lock may be someone else's by now, and the request must not write.
var ErrLeaseLost = errors.New("lock: the lease could not be proved: the lock may be another's now")

// WithRequest returns ctx for one request: it carries a fresh owner token (16 random bytes, as
// the articles' UUID), and it ends, with cause ErrLeaseLost, when a lock the request holds can no
// longer prove its lease. Call done when the request is over. Go has no ThreadLocal, and a
// goroutine is not a request anyway; the request's context is what travels with the request.
func WithRequest(ctx context.Context) (_ context.Context, done func()) {
	b := make([]byte, 16)
	rand.Read(b)
	ctx, cancel := context.WithCancelCause(ctx)
	r := &request{owner: hex.EncodeToString(b), cancel: cancel}
	return context.WithValue(ctx, requestKey{}, r), func() { cancel(nil) }
}

// ErrNoRequest is Lock's and Unlock's answer to a context WithRequest did not make.
var ErrNoRequest = errors.New("lock: the context carries no request (use WithRequest)")

func requestOf(ctx context.Context) (*request, error) {
	r, ok := ctx.Value(requestKey{}).(*request)
	if !ok {
		return nil, ErrNoRequest
	}
	return r, nil
}

var (
	//go:embed lock.lua
	lockLua    string
	lockScript = redis.NewScript(lockLua)
	//go:embed unlock.lua
	unlockLua    string
	unlockScript = redis.NewScript(unlockLua)
	//go:embed renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)
	//go:embed leave.lua
	leaveLua    string
	leaveScript = redis.NewScript(leaveLua)
)

// retryBudget is how long Lock keeps waiting, in leases: 10 × TTL.
const retryBudget = 10

// line is key's line of waiters, and by the time by which each must ask again to keep its place.
func line(key string) []string { return []string{key, key + ":line", key + ":line:by"} }

// turns is the prefix of the channels on which a waiter is told its turn: turns(key) + its owner.
func turns(key string) string { return key + ":turn:" }

// leave takes the request out of key's line, passing the turn on if it had it.
func (l *Locker) leave(key string, req *request) {
	ctx, cancel := context.WithTimeout(l.life, l.ttl)
	defer cancel()
	leaveScript.Run(ctx, l.rdb, line(key), req.owner, turns(key))
}

// Lock takes key for the request in ctx with lock.lua: at once if the lock is free and nobody
// waits, or already the request's (one more hold). Otherwise the request is in line; it subscribes to its
// turn channel, tries again (a turn told before the subscription would otherwise be missed), and
// then sleeps until its turn is told or could have come, and tries again, for retryBudget leases;
// then it leaves the line and answers false. A message lost costs one lease, never a hang. The
// request's first hold starts its lease guard, counting the lease from the moment the winning try
// was sent.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	req, err := requestOf(ctx)
	if err != nil {
		return false, err
	}
	ok, left, err := l.try(ctx, key, req)
	if ok || err != nil {
		return ok, err
	}
	sub := l.rdb.Subscribe(ctx, turns(key)+req.owner)
	defer sub.Close()
	// ReceiveTimeout reads ctx's deadline but not its cancellation: closing the subscription is
	// what wakes a waiter whose request ends.
	stop := context.AfterFunc(ctx, func() { sub.Close() })
	defer stop()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is in place
		l.leave(key, req)
		return false, err
	}
	giveUp := time.Now().Add(retryBudget * l.ttl)
	for {
		ok, left, err = l.try(ctx, key, req)
		if ok || err != nil {
			return ok, err
		}
		wait := min(left, time.Until(giveUp))
		if wait <= 0 {
			l.leave(key, req)
			return false, nil
		}
		// A message, a timeout or an error all lead to the next try; only ctx ends the wait.
		sub.ReceiveTimeout(ctx, wait)
		if ctx.Err() != nil {
			l.leave(key, req)
			return false, ctx.Err()
		}
	}
}

// try runs lock.lua once for req: whether the request holds key now, and else how long it may wait
// before it asks again.
func (l *Locker) try(ctx context.Context, key string, req *request) (bool, time.Duration, error) {
	sent := time.Now()
	stay := 2 * l.ttl // a waiter must ask again within it to keep its place in line
	r, err := lockScript.Run(ctx, l.rdb, line(key), req.owner, l.ttl.Milliseconds(), stay.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if r[0] == 1 {
		if r[1] == 1 {
			l.guard(key, req, sent)
		}
		return true, 0, nil
	}
	return false, max(time.Duration(r[1])*time.Millisecond, time.Millisecond), nil
}

// margin is how long before its lease could run out a guard gives up on an unproved lease: clock
// drift (Redlock allows 1% of the lease + 2 ms) and the time a write takes to land, with room.
func (l *Locker) margin() time.Duration { return l.ttl / 10 }

// lease is one request's lease on a lock, kept by the process's clock.
type lease struct {
	key    string
	req    *request
	due    time.Time // when to renew it: TTL/3 after it was last proved
	until  time.Time // proved until the last answered try's or renewal's send + TTL − margin
	asking bool      // a renewal is on its way
}

// guard starts the request's lease, valid at most until sent + TTL.
func (l *Locker) guard(key string, req *request, sent time.Time) {
	g := &lease{key: key, req: req, due: time.Now().Add(l.ttl / 3),
		until: sent.Add(l.ttl - l.margin())}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leases[req] = g
	l.arm(g.due)
}

// arm makes sure the process's clock rings by at; l.mu is held. The clock is one timer for all the
// process's leases (Redisson's watchdog runs on one timer wheel per client): a lock taken and given
// back within TTL/3 does not move it.
func (l *Locker) arm(at time.Time) {
	if !l.rings.IsZero() && !at.Before(l.rings) {
		return
	}
	l.rings = at
	if l.clock == nil {
		l.clock = time.AfterFunc(time.Until(at), l.tick)
		return
	}
	l.clock.Reset(time.Until(at))
}

// tick is the process's clock. A lease that can no longer be proved ends its request; a lease due
// is renewed, each renewal on its own; the clock is armed again for the next lease due, or, while a
// renewal is unanswered, for when that lease could run out. A dead process's clock stops.
func (l *Locker) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rings = time.Time{}
	if l.life.Err() != nil {
		return
	}
	now := time.Now()
	for req, g := range l.leases {
		switch {
		case !now.Before(g.until):
			delete(l.leases, req)
			req.cancel(ErrLeaseLost)
		case g.asking:
			l.arm(g.until)
		case !now.Before(g.due):
			g.asking = true
			l.arm(g.until)
			go l.renew(g, g.until)
		default:
			l.arm(g.due)
		}
	}
}

// renew renews g with renew.lua, within the time the lease can still be proved. A renewal
// answered pushes the lease; one refused (the lock is not the request's) ends the request at once;
// one unanswered leaves the lease where it was, and is sent again at half the time the lease has
// left, until it is answered or the lease runs out.
func (l *Locker) renew(g *lease, until time.Time) {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.life, until)
	n, err := renewScript.Run(ctx, l.rdb, []string{g.key}, g.req.owner, l.ttl.Milliseconds()).Int()
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	g.asking = false
	switch {
	case l.leases[g.req] != g: // given back, or lost, meanwhile
	case err == nil && n == 0:
		delete(l.leases, g.req)
		g.req.cancel(ErrLeaseLost)
	case err == nil:
		g.until = sent.Add(l.ttl - l.margin())
		g.due = time.Now().Add(l.ttl / 3)
		l.arm(g.due)
	default: // asked again at half the time the lease has left: one round lost is not the end
		g.due = time.Now().Add(min(l.ttl/3, time.Until(g.until)/2))
		l.arm(g.due)
	}
}

// release stops the request's lease guard.
func (l *Locker) release(req *request) {
	l.mu.Lock()
	delete(l.leases, req)
	l.mu.Unlock()
}

// Unlock gives back one hold of the request in ctx with unlock.lua. The last one deletes the lock,
// tells the first waiter in line its turn, and stops the request's lease guard. It returns
// steps.ErrNotOwner, and stops the guard, when the lock is not the request's any more; an error
// from Redis stops the guard too, since a lock it cannot give back is left to its lease.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	req, err := requestOf(ctx)
	if err != nil {
		return err
	}
	left, err := unlockScript.Run(ctx, l.rdb, line(key)[:2], req.owner, turns(key)).Int64()
	switch {
	case err != nil:
		l.release(req)
		return err
	case left < 0:
		l.release(req)
		return steps.ErrNotOwner
	case left == 0:
		l.release(req)
	}
	return nil
}
