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
	idArg any    // id, the lease in ms and a waiter's stay (2 × TTL), boxed once for the scripts
	ttlMs any
	stay  any
	ttl   time.Duration
	life  context.Context             // the process's: its leases and its subscription stop with it
	spawn func(func(context.Context)) // starts the process's goroutine that reads its turns
	last  atomic.Pointer[names]       // the names of the last key locked: built once, not per call

	mu      sync.Mutex               // guards leases, the clock and waiting: requests of one process lock and unlock at once
	leases  map[*request]*lease      // the lease of each request that holds a lock
	clock   *time.Timer              // the one timer of all the process's leases; nil until the first
	rings   time.Time                // when the clock is armed for; zero when it is not
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
	if spawn == nil { // a Proc made by hand: its reader ends when its client is closed
		spawn = func(f func(context.Context)) { go f(life) }
	}
	b := make([]byte, 8)
	rand.Read(b)
	id := hex.EncodeToString(b)
	return &Locker{rdb: p.Redis, id: id, idArg: id, ttlMs: p.TTL.Milliseconds(), stay: (2 * p.TTL).Milliseconds(),
		ttl: p.TTL, life: life, spawn: spawn, leases: map[*request]*lease{},
		waiting: map[string]chan struct{}{}, heard: map[string]chan struct{}{}}
}

// request is one request: its token, and the end of its context.
type request struct {
	id     string
	idArg  any // id, boxed once for the scripts
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
	id := hex.EncodeToString(b)
	r := &request{id: id, idArg: id, cancel: cancel}
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
// request's token (Redisson names its owners client id : thread id). The scripts are given the two
// parts and join them; unlock.lua reads the process back from it, to tell a waiter its turn on its
// process's channel.
func (l *Locker) owner(r *request) string { return l.id + ":" + r.id }

var (
	//go:embed lock.lua
	lockLua    string
	lockScript = newScript(lockLua)
	//go:embed unlock.lua
	unlockLua    string
	unlockScript = newScript(unlockLua)
	//go:embed renew.lua
	renewLua    string
	renewScript = newScript(renewLua)
	//go:embed leave.lua
	leaveLua    string
	leaveScript = newScript(leaveLua)
)

// script is one Lua script, its body and its SHA1 boxed once.
type script struct{ src, sha any }

func newScript(src string) script { return script{src: src, sha: redis.NewScript(src).Hash()} }

// run sends s with EVALSHA, and again with EVAL when Redis does not have it (NOSCRIPT: the first
// time, or after a restart), as redis.Script.Run does. Its keys and arguments come boxed, built
// once where they can be: Script.Run boxes every key name again on every call, and on this path
// every allocation shows. Hazard: a script may still run twice only if the EVALSHA did not run,
// which is what NOSCRIPT says.
func (s script) run(ctx context.Context, rdb *redis.Client, keys []any, args ...any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(append(append(a, "evalsha", s.sha, len(keys)), keys...), args...)
	cmd := redis.NewCmd(ctx, a...)
	if err := rdb.Process(ctx, cmd); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		a[0], a[1] = "eval", s.src
		cmd = redis.NewCmd(ctx, a...)
		rdb.Process(ctx, cmd)
	}
	return cmd
}

// retryBudget is how long Lock keeps waiting, in leases: 10 × TTL. A waiter must ask again within
// 2 × TTL to keep its place in line; it waits at most a lease, or, while the lock is free and an
// earlier waiter has the turn, until that waiter's own deadline.
const retryBudget = 10

// names are one lock's names in Redis: the lock, the line of waiting requests and the time by which
// each must ask again to stay in it; and the prefix of the turn channels (followed by a process's
// id: the channel on which that process is told a request of its has the turn).
type names struct {
	key     string
	keys    []any // the lock, its line, its waiters' deadlines
	turn    string
	turnArg any // turn, boxed once
}

// names returns key's names, built once for the last key this process locked: an order locks
// one key over and over.
func (l *Locker) names(key string) *names {
	if n := l.last.Load(); n != nil && n.key == key {
		return n
	}
	turn := key + ":turn:"
	n := &names{key: key, keys: []any{key, key + ":line", key + ":line:by"}, turn: turn, turnArg: turn}
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
	n := l.names(key)
	ok, wait, err := l.try(ctx, n, req)
	if ok || err != nil {
		return ok, err
	}
	owner := l.owner(req)
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
		l.leave(ctx, n, req)
		return false, ctx.Err()
	}
	for {
		ok, wait, err = l.try(ctx, n, req)
		if ok || err != nil {
			return ok, err
		}
		wait = min(wait, time.Until(giveUp))
		if wait <= 0 {
			l.leave(ctx, n, req)
			return false, nil
		}
		t.Reset(wait)
		select {
		case <-turn:
		case <-t.C:
		case <-ctx.Done():
			l.leave(ctx, n, req)
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

// read is the process's one reader of its turns, until the process dies or its client is closed
// (a Proc made by hand has no other end): a confirmed subscription releases the requests waiting
// for it; a turn wakes the request it names. A broken connection is dialled again on the next
// read, which subscribes again; a turn told meanwhile is lost, and costs its waiter one wait.
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
func (l *Locker) leave(ctx context.Context, n *names, req *request) {
	leaveScript.run(context.WithoutCancel(ctx), l.rdb, n.keys, l.idArg, req.idArg, n.turnArg)
}

// try runs lock.lua once for req: whether the request holds the lock now, and else how long it may
// wait before it asks again.
func (l *Locker) try(ctx context.Context, n *names, req *request) (bool, time.Duration, error) {
	sent := time.Now()
	r, err := lockScript.run(ctx, l.rdb, n.keys, l.idArg, req.idArg, l.ttlMs, l.stay).Int64()
	if err != nil {
		return false, 0, err
	}
	if r > 0 {
		if r == 1 {
			l.guard(n, req, sent)
		}
		return true, 0, nil
	}
	return false, max(time.Duration(-r)*time.Millisecond, time.Millisecond), nil
}

// margin is how long before its lease could run out a guard gives up on an unproved lease: clock
// drift (Redlock allows 1% of the lease + 2 ms) and the time a write takes to land, with room.
func (l *Locker) margin() time.Duration { return l.ttl / 10 }

// lease is one request's lease on a lock, kept by the process's clock.
type lease struct {
	keys   []any // the lock's name alone, for renew.lua
	req    *request
	due    time.Time // when to renew it: TTL/3 after it was last proved
	until  time.Time // the lease is proved until then (the last answered try or renewal's send + TTL − margin)
	asking bool      // a renewal is on its way
}

// guard starts the request's lease, valid at most until sent + TTL.
func (l *Locker) guard(n *names, req *request, sent time.Time) {
	g := &lease{keys: n.keys[:1], req: req, due: time.Now().Add(l.ttl / 3), until: sent.Add(l.ttl - l.margin())}
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
	n, err := renewScript.run(ctx, l.rdb, g.keys, l.idArg, g.req.idArg, l.ttlMs).Int()
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
// tells the first waiter in line its turn has come, and stops the request's lease guard. It returns
// steps.ErrNotOwner, and stops the guard, when the lock is not the request's any more; an error
// from Redis stops the guard too, since a lock it cannot give back is left to its lease.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	req, err := requestOf(ctx)
	if err != nil {
		return err
	}
	n := l.names(key)
	left, err := unlockScript.run(ctx, l.rdb, n.keys[:2], l.idArg, req.idArg, n.turnArg).Int64()
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
