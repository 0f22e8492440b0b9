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
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Locker keeps the lock on a majority of independent Redis nodes (Redlock): on each, a hash of
// owner → holds in Lua scripts that check the owner to lock, unlock and renew. It asks every node
// at once, each with a short timeout, and holds the lock only if a majority said yes and time is
// left of the lease once the asking, and the clocks' drift, are paid for; otherwise it gives back
// what it got, pauses and tries again, for a bounded time. The owner is the request, a token in its
// context (WithRequest). While a request holds the lock, a lease guard renews it on every node
// every TTL/3 and, when it can no longer prove the lease on a majority, ends the request's
// context. Hazard: a majority is only as good as each node's memory: a node that restarts without
// persistence forgets the lock, and with the node the holder missed, a second request has a
// majority too. And a process paused after its last check still writes.
type Locker struct {
	nodes  []*redis.Client
	ttl    time.Duration
	life   context.Context     // the process's: its leases stop with it
	mu     sync.Mutex          // guards leases and the clock (one process, many requests)
	leases map[*request]*lease // the lease of each request that holds a lock
	clock  *time.Timer         // the one timer of all the process's leases; nil until the first
	rings  time.Time           // when the clock is armed for; zero when it is not
}

// New returns a Locker for the process p, on every lock node it has.
func New(p steps.Proc) steps.Locker {
	life := p.Ctx
	if life == nil {
		life = context.Background() // a Proc made by hand, not by a process
	}
	return &Locker{nodes: p.Nodes, ttl: p.TTL, life: life, leases: map[*request]*lease{}}
}

// quorum is how many nodes make a majority.
func (l *Locker) quorum() int { return len(l.nodes)/2 + 1 }

// nodeTimeout bounds one node's answer: short against the lease, so a node that is down costs
// little of it (Redlock's page suggests milliseconds against a lease of seconds; a quarter lease
// leaves room for the lab's simulated network and first connections).
func (l *Locker) nodeTimeout() time.Duration { return l.ttl / 4 }

// drift is what Redlock sets aside for the nodes' clocks running apart: 1% of the lease + 2 ms.
func (l *Locker) drift() time.Duration { return l.ttl/100 + 2*time.Millisecond }

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
)

// retryBudget is how long Lock keeps trying, in leases: 10 × TTL.
const retryBudget = 10

// Lock takes key for the request in ctx on a majority of the nodes. Each try runs lock.lua on
// every node at once, each with nodeTimeout; the try wins if a majority answered yes and the
// lease still has time left once the try's own time (on the monotonic clock) and the drift are
// taken off; a node that fails or does not answer in time counts as a no. A try that loses gives
// back what it got on every node, pauses, and tries again, for
// retryBudget leases; then Lock answers false. The request's first hold starts its lease guard.
// Hazard: giving back after a losing try releases the request's holds on every node, nested ones
// included: a nested Lock that loses leaves the outer hold without a majority.
func (l *Locker) Lock(ctx context.Context, key string) (bool, error) {
	req, err := requestOf(ctx)
	if err != nil {
		return false, err
	}
	giveUp := time.Now().Add(retryBudget * l.ttl)
	for {
		start := time.Now()
		yes, holds, _ := l.onEach(ctx, func(ctx context.Context, c *redis.Client) (int64, error) {
			r, err := lockScript.Run(ctx, c, []string{key}, req.owner,
				l.ttl.Milliseconds()).Int64Slice()
			if err != nil || r[0] != 1 {
				return 0, err
			}
			return r[1], nil
		})
		validity := l.ttl - time.Since(start) - l.drift()
		if yes >= l.quorum() && validity > 0 {
			if holds == 1 && !l.guarded(req) {
				l.guard(key, req, start)
			}
			return true, nil
		}
		// Give back on every node, also those that seemed to say no: a node that timed out
		// may have taken the lock all the same.
		l.giveBack(ctx, key, req)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if time.Now().After(giveUp) {
			return false, nil
		}
		if err := sleep(ctx, l.pause()); err != nil {
			return false, err
		}
	}
}

// nodeCall is one command of a request on one node: a positive answer counts as a yes.
type nodeCall func(ctx context.Context, c *redis.Client) (int64, error)

// onEach runs f on every node at once, each within nodeTimeout, and counts the nodes that
// answered with a positive number; it returns the smallest such number (a request's holds on the
// node that knows of fewest), and the first error, if any.
func (l *Locker) onEach(ctx context.Context, f nodeCall) (yes int, least int64, err error) {
	type answer struct {
		n   int64
		err error
	}
	answers := make(chan answer, len(l.nodes))
	for _, c := range l.nodes {
		go func() {
			nctx, cancel := context.WithTimeout(ctx, l.nodeTimeout())
			defer cancel()
			n, err := f(nctx, c)
			answers <- answer{n, err}
		}()
	}
	for range l.nodes {
		a := <-answers
		switch {
		case a.err != nil && err == nil:
			err = a.err
		case a.n > 0:
			yes++
			if least == 0 || a.n < least {
				least = a.n
			}
		}
	}
	return yes, least, err
}

// giveBack releases what a losing try got, on every node: unlock.lua only touches the request's
// own holds.
func (l *Locker) giveBack(ctx context.Context, key string, req *request) {
	l.onEach(context.WithoutCancel(ctx), func(ctx context.Context, c *redis.Client) (int64, error) {
		return 0, unlockScript.Run(ctx, c, []string{key}, req.owner).Err()
	})
}

// pause is the wait between two tries: a fixed quarter TTL plus up to a quarter TTL more at
// random, as the article's fixed time + random range, so requests that failed together do not
// all try together again (Redlock asks for a random delay for the same reason).
func (l *Locker) pause() time.Duration {
	return l.ttl/4 + mrand.N(l.ttl/4)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// margin is how long before its lease could run out a guard gives up on an unproved lease: clock
// drift and the time a write takes to land, with room.
func (l *Locker) margin() time.Duration { return l.ttl / 10 }

// lease is one request's lease on a lock, kept by the process's clock.
type lease struct {
	key    string
	req    *request
	due    time.Time // when to renew it: TTL/3 after it was last proved
	until  time.Time // proved until: the last won try's (or renewal's) send + TTL − drift − margin
	asking bool      // a renewal is on its way
}

// guarded reports whether the request has a lease guard already: a node that forgot the lock
// (restarted) shows a first hold where the others show a nested one.
func (l *Locker) guarded(req *request) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leases[req] != nil
}

// guard starts the request's lease, valid at most until sent + TTL − drift.
func (l *Locker) guard(key string, req *request, sent time.Time) {
	g := &lease{key: key, req: req, due: time.Now().Add(l.ttl / 3),
		until: sent.Add(l.ttl - l.drift() - l.margin())}
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

// renew renews g with renew.lua on every node, within the time the lease can still be proved.
// Renewed on a majority within the lease, it pushes the lease; refused by a majority (the lock is
// not the request's there), it ends the request at once; otherwise it leaves the lease where it
// was, and is sent again at half the time the lease has left, until it is proved or runs out.
func (l *Locker) renew(g *lease, until time.Time) {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.life, until)
	renewed, refused := 0, 0
	var mu sync.Mutex
	l.onEach(ctx, func(ctx context.Context, c *redis.Client) (int64, error) {
		n, err := renewScript.Run(ctx, c, []string{g.key}, g.req.owner, l.ttl.Milliseconds()).Int()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil && n == 1:
			renewed++
		case err == nil:
			refused++
		}
		return int64(n), err
	})
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	g.asking = false
	switch {
	case l.leases[g.req] != g: // given back, or lost, meanwhile
	case refused >= l.quorum():
		delete(l.leases, g.req)
		g.req.cancel(ErrLeaseLost)
	case renewed >= l.quorum() && time.Since(sent) < l.ttl-l.drift():
		g.until = sent.Add(l.ttl - l.drift() - l.margin())
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

// Unlock gives back one hold of the request in ctx with unlock.lua, on every node. It returns
// steps.ErrNotOwner when a majority of the nodes say the lock is not the request's (and stops its
// lease guard); when the request's last hold is given back, the guard stops too.
func (l *Locker) Unlock(ctx context.Context, key string) error {
	req, err := requestOf(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	notMine, last := 0, 0
	_, _, err = l.onEach(ctx, func(ctx context.Context, c *redis.Client) (int64, error) {
		left, err := unlockScript.Run(ctx, c, []string{key}, req.owner).Int64()
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
		case left < 0:
			notMine++
		case left == 0:
			last++
		}
		return 0, err
	})
	switch {
	case notMine >= l.quorum():
		l.release(req)
		return steps.ErrNotOwner
	case last+notMine >= l.quorum():
		l.release(req)
	case err != nil:
		l.release(req)
		return err
	}
	return nil
}
