// Package lock is one step of lockstep's Redis lock: README.md beside this file says which one,
// what it fixes and what still breaks. Every step package is named lock, so that diff -ru between
// two step folders shows only the idea the later one adds.
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
// request of the same process waits like anyone else. A request that finds the lock taken joins a
// line of waiters kept in Redis, first come first, and sleeps until the unlock tells the first in
// line on its own channel, or until its turn could have come, for a bounded time; a waiter that
// stops asking drops out of the line. Each acquisition takes a fencing token, the next number of a
// counter on the lock server, which the request shows the inventory with every read and write: the
// inventory refuses a token lower than one it has seen, so a write from a holder paused past its
// lease is refused. While a request holds the lock, a lease guard renews it every TTL/3 and, when
// it can no longer prove the lease, ends the request's context. Hazard: the counter lives beside
// the lock, on one Redis: a failover or a restart that loses the lock loses the counter's last
// increments too, and hands a token out again; an equal token is not refused.
type Locker struct {
	rdb    *redis.Client
	ttl    time.Duration
	life   context.Context   // the process's: its leases stop with it
	mu     sync.Mutex        // guards leases: requests of one process lock and unlock at once
	leases map[string]*lease // the lease of each request that holds a lock, by owner token
}

// New returns a Locker for the process p.
func New(p steps.Proc) steps.Locker {
	life := p.Ctx
	if life == nil {
		life = context.Background() // a Proc made by hand, not by a process
	}
	return &Locker{rdb: p.Redis, ttl: p.TTL, life: life, leases: map[string]*lease{}}
}

// request is one request: its owner token, its fencing token, and the end of its context.
type request struct {
	owner  string
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	fence  int64 // the fencing token of its first hold; 0 before
}

// Token is the fencing token of the lock the request in ctx holds (0 if it holds none): show it
// to the resource with every read and write.
func Token(ctx context.Context) int64 {
	r, err := requestOf(ctx)
	if err != nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fence
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

// retryBudget is how long Lock keeps waiting, in leases: 10 × TTL. A waiter must ask again within
// 2 × TTL to keep its place in line; it waits at most a lease, or, while the lock is free and an
// earlier waiter has the turn, until that waiter's own deadline.
const retryBudget = 10

// line is the list of waiting requests, and by the time each must ask again to stay in it.
func line(key string) []string { return []string{key, key + ":line", key + ":line:by"} }

// fenced is line's keys and the counter the fencing tokens come from.
func fenced(key string) []string { return append(line(key), key+":fence") }

// turn is the channel on which unlock.lua tells the first waiter of key it is its turn.
func turn(key string) string { return key + ":turn:" }

// Lock takes key for the request in ctx with lock.lua: at once if the lock is free and nobody is
// waiting, or it is already the request's (one more hold). Otherwise the request is now in line;
// it subscribes to its own turn channel, asks again (its turn may have come meanwhile), and then
// sleeps until it is told its turn has come or until it could have, and asks again, for
// retryBudget leases; then it leaves the line and answers false. A message lost costs one lease,
// never a hang. The request's first hold starts its lease guard, counting the lease from the
// moment the winning try was sent.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	req, err := requestOf(ctx)
	if err != nil {
		return false, err
	}
	ok, left, err := l.try(ctx, key, req)
	if ok || err != nil {
		return ok, err
	}
	sub := l.rdb.Subscribe(ctx, turn(key)+req.owner)
	defer sub.Close()
	// ReceiveTimeout reads ctx's deadline but not its cancellation: closing the subscription is
	// what wakes a waiter whose request ends.
	stop := context.AfterFunc(ctx, func() { sub.Close() })
	defer stop()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is in place
		l.leave(ctx, key, req)
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
			l.leave(ctx, key, req)
			return false, nil
		}
		// A message, a timeout or an error all lead to the next try; only ctx ends the wait.
		sub.ReceiveTimeout(ctx, wait)
		if ctx.Err() != nil {
			l.leave(ctx, key, req)
			return false, ctx.Err()
		}
	}
}

// leave takes a request that stops waiting out of the line with leave.lua, so nobody waits for
// its turn to pass; if it cannot (Redis is out of reach), its deadline drops it.
func (l *Locker) leave(ctx context.Context, key string, req *request) {
	leaveScript.Run(context.WithoutCancel(ctx), l.rdb, line(key), req.owner, turn(key))
}

// try runs lock.lua once for req: whether the request holds key now, and else how long it may
// wait before it asks again.
func (l *Locker) try(ctx context.Context, key string, req *request) (bool, time.Duration, error) {
	sent := time.Now()
	stay := (2 * l.ttl).Milliseconds() // how long a waiter keeps its place without asking again
	r, err := lockScript.Run(ctx, l.rdb, fenced(key), req.owner, l.ttl.Milliseconds(), stay).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if r[0] == 1 {
		if r[1] == 1 {
			req.mu.Lock()
			req.fence = r[2]
			req.mu.Unlock()
			l.guard(key, req, sent)
		}
		return true, 0, nil
	}
	return false, max(time.Duration(r[1])*time.Millisecond, time.Millisecond), nil
}

// margin is how long before its lease could run out a guard gives up on an unproved lease: clock
// drift (Redlock allows 1% of the lease + 2 ms) and the time a write takes to land, with room.
func (l *Locker) margin() time.Duration { return l.ttl / 10 }

// lease is one request's lease on a lock: a timer that renews it every TTL/3, and a timer that
// ends the request if no renewal has proved it by the time it could run out.
type lease struct {
	key    string
	req    *request
	renew  *time.Timer
	expire *time.Timer
	mu     sync.Mutex
	over   bool // stopped: no callback may act any more
}

// guard starts the request's lease, valid at most until sent + TTL.
func (l *Locker) guard(key string, req *request, sent time.Time) {
	g := &lease{key: key, req: req}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire = time.AfterFunc(time.Until(sent.Add(l.ttl-l.margin())), func() { l.lost(g) })
	g.renew = time.AfterFunc(l.ttl/3, func() { l.extend(g) })
	l.mu.Lock()
	l.leases[req.owner] = g
	l.mu.Unlock()
}

// extend renews g with renew.lua, within the time the lease can still be proved: a renewal
// answered pushes the guard's deadline; one refused (the lock is not the request's) ends the
// request at once; one unanswered leaves the deadline where it was.
func (l *Locker) extend(g *lease) {
	if l.life.Err() != nil {
		l.stop(g) // the process died; so do its timers
		return
	}
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.life, sent.Add(l.ttl-l.margin()))
	n, err := renewScript.Run(ctx, l.rdb, []string{g.key}, g.req.owner, l.ttl.Milliseconds()).Int()
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.over:
	case err == nil && n == 0:
		g.over = true
		g.expire.Stop()
		g.req.cancel(ErrLeaseLost)
	case err == nil:
		g.expire.Reset(time.Until(sent.Add(l.ttl - l.margin())))
		g.renew.Reset(l.ttl / 3)
	default:
		g.renew.Reset(l.ttl / 3)
	}
}

// lost ends the request whose lease could not be proved in time.
func (l *Locker) lost(g *lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.over {
		return
	}
	g.over = true
	g.renew.Stop()
	g.req.cancel(ErrLeaseLost)
}

// stop stops g's timers; no callback of g acts after it returns.
func (l *Locker) stop(g *lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.over = true
	g.renew.Stop()
	g.expire.Stop()
}

// release stops the request's lease guard.
func (l *Locker) release(owner string) {
	l.mu.Lock()
	g := l.leases[owner]
	delete(l.leases, owner)
	l.mu.Unlock()
	if g != nil {
		l.stop(g)
	}
}

// Unlock gives back one hold of the request in ctx with unlock.lua. The last one deletes the lock,
// tells the first waiter in line its turn has come, and stops the request's lease guard. It returns
// steps.ErrNotOwner, and stops the guard, when the lock is not the request's any more; an error
// from Redis stops the guard too, since a lock it cannot give back is left to its lease.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	req, err := requestOf(ctx)
	if err != nil {
		return err
	}
	left, err := unlockScript.Run(ctx, l.rdb, line(key)[:2], req.owner, turn(key)).Int64()
	switch {
	case err != nil:
		l.release(req.owner)
		return err
	case left < 0:
		l.release(req.owner)
		return steps.ErrNotOwner
	case left == 0:
		l.release(req.owner)
	}
	return nil
}
