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
	"sync/atomic"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker keeps the lock as a Redis hash of owner → holds, in Lua scripts that check the owner to
// lock, unlock and renew. The owner is the request, not the process: a token carried in the
// request's context (WithRequest), so a nested call in the same request re-enters and another
// request of the same process waits like anyone else. A request that finds the lock taken joins a
// line of waiters kept in Redis, first come first, and sleeps until the unlock tells the first in
// line its turn has come, or until its turn could have come, for a bounded time; a waiter that
// stops asking drops out of the line. The turn is told on the waiting process's own channel, which
// the process subscribes to once, on one connection, for all its requests. While a request holds
// the lock, a lease guard renews it every TTL/3 and, when it can no longer prove the lease (a
// renewal refused, or none answered before the lease could have run out), ends the request's
// context, so the request stops before another holder can be inside. Hazard: a check only helps
// before the write leaves; a process paused after its last check writes anyway, and only the
// resource can refuse that write.
type Locker struct {
	rdb   *redis.Client
	id    string // the process's part of every owner token, and the name of its turn channel
	ttl   time.Duration
	ttlMs any // the lease in ms and a waiter's stay (2 × TTL), boxed once for the scripts
	stay  any
	life  context.Context             // the process's: its leases and its subscription stop with it
	spawn func(func(context.Context)) // starts the process's goroutine that reads its turns
	last  atomic.Pointer[names]       // the names of the last key locked: built once, not per call

	mu      sync.Mutex               // guards leases and waiting: requests of one process lock and unlock at once
	leases  map[string]*lease        // the lease of each request that holds a lock, by owner token
	waiting map[string]chan struct{} // the wake-up of each request of this process waiting in a line, by owner token

	subMu sync.Mutex               // guards sub and heard
	sub   *redis.PubSub            // the process's one subscription; nil until a request first waits
	heard map[string]chan struct{} // each turn channel asked for, closed once Redis confirmed it
}

// New returns a Locker for the process p.
func New(p steps.Proc) steps.Locker {
	life := p.Ctx
	if life == nil {
		life = context.Background() // a Proc made by hand, not by a process
	}
	spawn := p.Go
	if spawn == nil { // a Proc made by hand: its reader lives as long as the program
		spawn = func(f func(context.Context)) { go f(life) }
	}
	b := make([]byte, 8)
	rand.Read(b)
	return &Locker{rdb: p.Redis, id: hex.EncodeToString(b), ttl: p.TTL, ttlMs: p.TTL.Milliseconds(),
		stay: (2 * p.TTL).Milliseconds(), life: life, spawn: spawn, leases: map[string]*lease{},
		waiting: map[string]chan struct{}{}, heard: map[string]chan struct{}{}}
}

// request is one request: its token, and the end of its context.
type request struct {
	id     string
	cancel context.CancelCauseFunc
}

type requestKey struct{}

// ErrLeaseLost is the cause a request's context ends with when its lock can no longer prove its
// lease: the lock may be someone else's by now, and the request must not write.
var ErrLeaseLost = errors.New("lock: the lease could not be proved: the lock may be another's now")

// WithRequest returns ctx for one request: it carries a fresh request token (16 random bytes, as
// the articles' UUID), and it ends, with cause ErrLeaseLost, when a lock the request holds can no
// longer prove its lease. Call done when the request is over. Go has no ThreadLocal, and a
// goroutine is not a request anyway; the request's context is what travels with the request.
func WithRequest(ctx context.Context) (_ context.Context, done func()) {
	b := make([]byte, 16)
	rand.Read(b)
	ctx, cancel := context.WithCancelCause(ctx)
	r := &request{id: hex.EncodeToString(b), cancel: cancel}
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

// owner is the request's name in the lock and in the line: the process's id, a colon, the
// request's token (Redisson names its owners client id : thread id). unlock.lua reads the process
// from it, to tell a waiter its turn on its process's channel.
func (l *Locker) owner(r *request) string { return l.id + ":" + r.id }

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

// names are one lock's names in Redis: the lock, the line of waiting requests and the time by which
// each must ask again to stay in it; and the prefix of the turn channels (followed by a process's
// id: the channel on which that process is told a request of its has the turn).
type names struct {
	key  string
	keys []string // the lock, its line, its waiters' deadlines
	turn string
}

// names returns key's names, built once for the last key this process locked: an order locks
// one key over and over.
func (l *Locker) names(key string) *names {
	if n := l.last.Load(); n != nil && n.key == key {
		return n
	}
	n := &names{key: key, keys: []string{key, key + ":line", key + ":line:by"}, turn: key + ":turn:"}
	l.last.Store(n)
	return n
}

// Lock takes key for the request in ctx with lock.lua: at once if the lock is free and nobody is
// waiting, or it is already the request's (one more hold). Otherwise the request is now in line;
// it makes sure its process is subscribed to its turn channel, asks again (its turn may have come
// meanwhile), and then sleeps until it is told its turn has come or until it could have, and asks
// again, for retryBudget leases; then it leaves the line and answers false. A message lost costs
// one lease, never a hang. The request's first hold starts its lease guard, counting the lease from
// the moment the winning try was sent.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	req, err := requestOf(ctx)
	if err != nil {
		return false, err
	}
	n, owner := l.names(key), l.owner(req)
	ok, wait, err := l.try(ctx, n, req, owner)
	if ok || err != nil {
		return ok, err
	}
	turn := make(chan struct{}, 1)
	l.mu.Lock()
	l.waiting[owner] = turn
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiting, owner)
		l.mu.Unlock()
	}()
	giveUp := time.Now().Add(retryBudget * l.ttl)
	t := time.NewTimer(wait)
	defer t.Stop()
	// The subscription is in place before the next try: a turn told before it would be missed.
	select {
	case <-l.listen(ctx, n):
	case <-t.C: // not confirmed within the wait: ask again anyway
	case <-ctx.Done():
		l.leave(ctx, n, owner)
		return false, ctx.Err()
	}
	for {
		ok, wait, err = l.try(ctx, n, req, owner)
		if ok || err != nil {
			return ok, err
		}
		wait = min(wait, time.Until(giveUp))
		if wait <= 0 {
			l.leave(ctx, n, owner)
			return false, nil
		}
		t.Reset(wait)
		select {
		case <-turn:
		case <-t.C:
		case <-ctx.Done():
			l.leave(ctx, n, owner)
			return false, ctx.Err()
		}
	}
}

// listen makes sure the process is subscribed to its turn channel for n, and returns a channel
// closed once Redis has confirmed it. The first wait of the process opens its subscription (one
// connection) and starts the goroutine that reads it; later waits reuse both.
func (l *Locker) listen(ctx context.Context, n *names) <-chan struct{} {
	ch := n.turn + l.id
	l.subMu.Lock()
	defer l.subMu.Unlock()
	if ready, ok := l.heard[ch]; ok {
		return ready
	}
	ready := make(chan struct{})
	l.heard[ch] = ready
	if l.sub != nil {
		l.sub.Subscribe(ctx, ch) // an error is mended by read: the reconnection subscribes again
		return ready
	}
	sub := l.rdb.Subscribe(ctx, ch)
	l.sub = sub
	l.spawn(func(life context.Context) { l.read(life, sub) })
	return ready
}

// reconnectPause is how long read waits before it reads again after an error, so that a Redis
// that is down is not dialled in a busy loop.
const reconnectPause = 10 * time.Millisecond

// read is the process's one reader of its turns, until the process dies: a confirmed subscription
// releases the requests waiting for it; a turn wakes the request it names. A broken connection is
// dialled again on the next read, which subscribes again; a turn told meanwhile is lost, and costs
// its waiter one wait.
func (l *Locker) read(life context.Context, sub *redis.PubSub) {
	stop := context.AfterFunc(life, func() { sub.Close() }) // what ends a read blocked on the connection
	defer stop()
	defer sub.Close()
	for {
		m, err := sub.Receive(life)
		if life.Err() != nil || errors.Is(err, redis.ErrClosed) {
			return
		}
		if err != nil {
			t := time.NewTimer(reconnectPause)
			select {
			case <-life.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		switch m := m.(type) {
		case *redis.Subscription:
			l.subMu.Lock()
			if ready := l.heard[m.Channel]; m.Kind == "subscribe" && ready != nil {
				select {
				case <-ready: // confirmed before: this is a reconnection's
				default:
					close(ready)
				}
			}
			l.subMu.Unlock()
		case *redis.Message:
			l.mu.Lock()
			turn := l.waiting[m.Payload]
			l.mu.Unlock()
			if turn != nil {
				select {
				case turn <- struct{}{}:
				default: // already told
				}
			}
		}
	}
}

// leave takes a request that stops waiting out of the line with leave.lua, so nobody waits for
// its turn to pass; if it cannot (Redis is out of reach), its deadline drops it.
func (l *Locker) leave(ctx context.Context, n *names, owner string) {
	leaveScript.Run(context.WithoutCancel(ctx), l.rdb, n.keys, owner, n.turn)
}

// try runs lock.lua once for req: whether the request holds the lock now, and else how long it may
// wait before it asks again.
func (l *Locker) try(ctx context.Context, n *names, req *request, owner string) (bool, time.Duration, error) {
	sent := time.Now()
	r, err := lockScript.Run(ctx, l.rdb, n.keys, owner, l.ttlMs, l.stay).Int64()
	if err != nil {
		return false, 0, err
	}
	if r > 0 {
		if r == 1 {
			l.guard(n.key, owner, req, sent)
		}
		return true, 0, nil
	}
	return false, max(time.Duration(-r)*time.Millisecond, time.Millisecond), nil
}

// margin is how long before its lease could run out a guard gives up on an unproved lease: clock
// drift (Redlock allows 1% of the lease + 2 ms) and the time a write takes to land, with room.
func (l *Locker) margin() time.Duration { return l.ttl / 10 }

// lease is one request's lease on a lock, kept by one timer: it fires TTL/3 after the lease was
// last proved, to renew it, and, while a renewal is unanswered, when the lease could run out.
type lease struct {
	key    string
	owner  string
	req    *request
	timer  *time.Timer
	mu     sync.Mutex
	until  time.Time // the lease is proved until then (the last answered try or renewal's send + TTL − margin)
	asking bool      // a renewal is on its way
	over   bool      // stopped: no callback may act any more
}

// guard starts the request's lease, valid at most until sent + TTL.
func (l *Locker) guard(key, owner string, req *request, sent time.Time) {
	g := &lease{key: key, owner: owner, req: req, until: sent.Add(l.ttl - l.margin())}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.timer = time.AfterFunc(l.ttl/3, func() { l.tick(g) })
	l.mu.Lock()
	l.leases[owner] = g
	l.mu.Unlock()
}

// tick is g's timer. Once the lease can no longer be proved, it ends the request; otherwise it
// renews with renew.lua, unless a renewal is on its way already. A renewal answered pushes the
// lease; one refused (the lock is not the request's) ends the request at once; one unanswered
// leaves the lease where it was, and the timer waits for it only until the lease could run out.
func (l *Locker) tick(g *lease) {
	g.mu.Lock()
	switch {
	case g.over:
		g.mu.Unlock()
		return
	case !time.Now().Before(g.until):
		g.over = true
		g.req.cancel(ErrLeaseLost)
		g.mu.Unlock()
		return
	case g.asking:
		g.timer.Reset(time.Until(g.until))
		g.mu.Unlock()
		return
	case l.life.Err() != nil:
		g.over = true // the process died; so does its timer
		g.mu.Unlock()
		return
	}
	g.asking = true
	until := g.until
	g.timer.Reset(time.Until(until)) // ends the request if this renewal is not answered in time
	g.mu.Unlock()

	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.life, until)
	n, err := renewScript.Run(ctx, l.rdb, []string{g.key}, g.owner, l.ttlMs).Int()
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asking = false
	switch {
	case g.over:
	case err == nil && n == 0:
		g.over = true
		g.timer.Stop()
		g.req.cancel(ErrLeaseLost)
	case err == nil:
		g.until = sent.Add(l.ttl - l.margin())
		g.timer.Reset(l.ttl / 3)
	default:
		g.timer.Reset(min(l.ttl/3, time.Until(g.until)))
	}
}

// stop stops g's timer; no callback of g acts after it returns.
func (l *Locker) stop(g *lease) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.over = true
	g.timer.Stop()
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
	n, owner := l.names(key), l.owner(req)
	left, err := unlockScript.Run(ctx, l.rdb, n.keys[:2], owner, n.turn).Int64()
	switch {
	case err != nil:
		l.release(owner)
		return err
	case left < 0:
		l.release(owner)
		return steps.ErrNotOwner
	case left == 0:
		l.release(owner)
	}
	return nil
}
