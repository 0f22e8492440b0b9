package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockstep-lab/lockstep/steps"
	step04 "github.com/lockstep-lab/lockstep/steps/04_atomic_ttl"
	step05 "github.com/lockstep-lab/lockstep/steps/05_owner"
	step06 "github.com/lockstep-lab/lockstep/steps/06_reentrant"
	step07 "github.com/lockstep-lab/lockstep/steps/07_spin"
	step08 "github.com/lockstep-lab/lockstep/steps/08_watchdog"
	step09 "github.com/lockstep-lab/lockstep/steps/09_lua_unlock"
	step10 "github.com/lockstep-lab/lockstep/steps/10_retry_jitter"
	step11 "github.com/lockstep-lab/lockstep/steps/11_hash_owner"
	step12 "github.com/lockstep-lab/lockstep/steps/12_lease_guard"
	step13 "github.com/lockstep-lab/lockstep/steps/13_pubsub"
	step14 "github.com/lockstep-lab/lockstep/steps/14_fair"
	step15 "github.com/lockstep-lab/lockstep/steps/15_redlock"
	step16 "github.com/lockstep-lab/lockstep/steps/16_fencing"
	getset "github.com/lockstep-lab/lockstep/steps/side_getset"
)

// contenders is the table every benchmark iterates: one line per lock, in the order of the tables
// that run.sh prints. Adding a lock is adding its line (and, for a step, its import). A step that
// does not exist yet is not listed; nor are 01–03 (no TTL set with the key) and 17, which takes no
// lock: its order sells with one atomic script and never calls Lock, and its Locker answers yes
// without asking Redis, so a row for it would time an empty function against real locks.
//
//   - peer: a library we compare against. Each lock's time is reported as a ratio to the best peer
//     (the lowest median) among the peers with the same number of nodes.
//   - nodes: the independent redis-servers the lock spans. Its constructor gets one client per node
//     in steps.Proc.Nodes (Proc.Redis is Nodes[0]). A lock on 3 nodes (a Redlock) is compared with
//     the 3-node peers only.
//   - blocking: Lock waits inside until it holds the key. A non-blocking lock (04–06) answers false
//     at once, and the contended benchmark's harness asks it again after retrySleep.
//   - request: the step's WithRequest, for a lock owned by the request rather than the process
//     (11–16). Every acquisition is then one request: Lock and Unlock share the context it makes,
//     and its done is called after the Unlock, as the step's order does (contender.newRequest).
//
// Hazard: a peer's figures depend on its options (retry pauses above all); each adapter below says
// which it uses, and docs/performance.md repeats them beside the numbers.
var contenders = []contender{
	{name: "lockstep-04_atomic_ttl", nodes: 1, new: step04.New},
	{name: "lockstep-side_getset", nodes: 1, new: getset.New},
	{name: "lockstep-05_owner", nodes: 1, new: step05.New},
	{name: "lockstep-06_reentrant", nodes: 1, new: step06.New},
	{name: "lockstep-07_spin", nodes: 1, blocking: true, new: step07.New},
	{name: "lockstep-08_watchdog", nodes: 1, blocking: true, new: step08.New},
	{name: "lockstep-09_lua_unlock", nodes: 1, blocking: true, new: step09.New},
	{name: "lockstep-10_retry_jitter", nodes: 1, blocking: true, new: step10.New},
	{name: "lockstep-11_hash_owner", nodes: 1, blocking: true, new: step11.New, request: noDone(step11.WithRequest)},
	{name: "lockstep-12_lease_guard", nodes: 1, blocking: true, new: step12.New, request: step12.WithRequest},
	{name: "lockstep-13_pubsub", nodes: 1, blocking: true, new: step13.New, request: step13.WithRequest},
	{name: "lockstep-14_fair", nodes: 1, blocking: true, new: step14.New, request: step14.WithRequest},
	{name: "lockstep-15_redlock", nodes: 3, blocking: true, new: step15.New, request: step15.WithRequest},
	{name: "lockstep-16_fencing", nodes: 1, blocking: true, new: step16.New, request: step16.WithRequest},
	{name: "redislock", peer: true, nodes: 1, blocking: true, new: newRedislock(time.Millisecond)},
	{name: "redislock-10ms", peer: true, nodes: 1, blocking: true, new: newRedislock(10 * time.Millisecond)},
	{name: "redsync", peer: true, nodes: 1, blocking: true, new: newRedsync},
	{name: "redsync-3nodes", peer: true, nodes: 3, blocking: true, new: newRedsync},
}

// locksFlag is -locks REGEXP (after -args when given to go test; run.sh's LOCKS): the interleaved
// benchmarks run only the contenders whose name it matches, so that one configuration of a few
// locks takes minutes where all of them take an hour.
var locksFlag = flag.String("locks", "",
	"run only the locks whose name matches this regexp; a ratio needs a peer among them")

// chosen returns the contenders -locks matches (see choose), and fails tb on a bad -locks.
func chosen(tb testing.TB) []contender {
	cs, err := choose(*locksFlag)
	if err != nil {
		tb.Fatal(err)
	}
	return cs
}

// choose returns the contenders whose name expr matches (unanchored), in the table's order; every
// one when expr is empty. Hazard: a lock is compared only with the peers that match as well; a
// subset without a peer on as many nodes reports no ratio ("no peer"), and a different set of
// peers can make a different one the best.
func choose(expr string) ([]contender, error) {
	if expr == "" {
		return contenders, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("-locks: %v", err)
	}
	var cs []contender
	for _, c := range contenders {
		if re.MatchString(c.name) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("-locks %q matches no lock", expr)
	}
	return cs, nil
}

// contender is one lock implementation under benchmark, seen through the lab's steps.Locker.
type contender struct {
	name     string
	peer     bool
	nodes    int
	blocking bool
	new      func(steps.Proc) steps.Locker
	request  func(context.Context) (context.Context, func())
}

// newRequest opens one request for c's Locker: the context its Lock and Unlock must share, and
// done, to call once the Unlock has returned. A lock owned by the process (no request) gets ctx as
// it is and a done that does nothing. Hazard: a request-owned Locker given a context its
// WithRequest did not make fails with its ErrNoRequest, and an Unlock given another request's
// context than its Lock's is refused (steps.ErrNotOwner): the key stays held until its lease runs
// out.
func (c contender) newRequest(ctx context.Context) (context.Context, func()) {
	if c.request == nil {
		return ctx, func() {}
	}
	return c.request(ctx)
}

// noDone adapts a WithRequest that only carries the owner token (step 11: nothing of the request
// needs ending) to the table's request, with a done that does nothing.
func noDone(withRequest func(context.Context) context.Context) func(context.Context) (context.Context, func()) {
	return func(ctx context.Context) (context.Context, func()) { return withRequest(ctx), func() {} }
}

// redislockLocker adapts github.com/bsm/redislock to steps.Locker: Obtain (a Lua script: SET NX
// with the token, sent as EVALSHA) retried every backoff until the ctx deadline, and Release (a
// Lua GET-compare-DEL, EVALSHA). Hazard: Unlock forgets the lock before it knows whether the
// release reached Redis, as a caller of redislock would.
type redislockLocker struct {
	c    *redislock.Client
	ttl  time.Duration
	opt  *redislock.Options
	held *redislock.Lock
}

// newRedislock returns the constructor of a redislock client that retries with
// redislock.LinearBackoff(backoff): 1 ms is the pause the harness sleeps between tries of the
// non-blocking steps 04–06, so the two polling designs compare; 10 ms is the peer issue 9's
// contended goal names.
func newRedislock(backoff time.Duration) func(steps.Proc) steps.Locker {
	return func(p steps.Proc) steps.Locker {
		return &redislockLocker{
			c:   redislock.New(p.Redis),
			ttl: p.TTL,
			opt: &redislock.Options{RetryStrategy: redislock.LinearBackoff(backoff)},
		}
	}
}

func (l *redislockLocker) Lock(ctx context.Context, key string) (bool, error) {
	lk, err := l.c.Obtain(ctx, key, l.ttl, l.opt)
	if errors.Is(err, redislock.ErrNotObtained) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	l.held = lk
	return true, nil
}

func (l *redislockLocker) Unlock(ctx context.Context, key string) error {
	if l.held == nil {
		return steps.ErrNotOwner
	}
	lk := l.held
	l.held = nil
	if err := lk.Release(ctx); err != nil {
		if errors.Is(err, redislock.ErrLockNotHeld) {
			return steps.ErrNotOwner
		}
		return err
	}
	return nil
}

// redsyncLocker adapts github.com/go-redsync/redsync/v4, one pool (goredis v9) per node of the
// process, to steps.Locker: Mutex.LockContext (SET NX PX on every node in parallel, a majority
// needed, with its default 32 tries 50–250 ms apart) and UnlockContext (a Lua GET-compare-DEL,
// EVALSHA, on every node). A failed try also sends that release script to every node, as redsync
// does. Hazard: each command runs in a goroutine of its own, even on one node.
type redsyncLocker struct {
	rs  *redsync.Redsync
	ttl time.Duration
	m   *redsync.Mutex
}

func newRedsync(p steps.Proc) steps.Locker {
	pools := make([]redsyncredis.Pool, len(p.Nodes))
	for i, rdb := range p.Nodes {
		pools[i] = redsyncgoredis.NewPool(rdb)
	}
	return &redsyncLocker{rs: redsync.New(pools...), ttl: p.TTL}
}

func (l *redsyncLocker) Lock(ctx context.Context, key string) (bool, error) {
	if l.m == nil || l.m.Name() != key {
		l.m = l.rs.NewMutex(key, redsync.WithExpiry(l.ttl))
	}
	err := l.m.LockContext(ctx)
	// After its last try redsync returns ErrFailed, or that try's error: *ErrTaken when a majority
	// of nodes hold the key, or *ErrNodeTaken joined with the other nodes' answers. A node that
	// could not be reached (*RedisError) is an error of the benchmark, never a busy lock.
	var (
		broken    *redsync.RedisError
		taken     *redsync.ErrTaken
		nodeTaken *redsync.ErrNodeTaken
	)
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &broken):
		return false, err
	case errors.Is(err, redsync.ErrFailed), errors.As(err, &taken), errors.As(err, &nodeTaken):
		return false, ctx.Err()
	}
	return false, err
}

func (l *redsyncLocker) Unlock(ctx context.Context, key string) error {
	if l.m == nil {
		return steps.ErrNotOwner
	}
	ok, err := l.m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return steps.ErrNotOwner
	}
	return nil
}

// TestChooseLocks: -locks picks contenders by an unanchored regexp, in the table's order, and
// refuses one that matches nothing or does not compile.
func TestChooseLocks(t *testing.T) {
	names := func(cs []contender) (ns []string) {
		for _, c := range cs {
			ns = append(ns, c.name)
		}
		return ns
	}
	all, err := choose("")
	if err != nil || len(all) != len(contenders) {
		t.Fatalf("choose(\"\") = %d locks, %v; want all %d", len(all), err, len(contenders))
	}
	got, err := choose("14_fair|16_fencing|redislock|redsync$")
	want := []string{"lockstep-14_fair", "lockstep-16_fencing", "redislock", "redislock-10ms", "redsync"}
	if err != nil || !slices.Equal(names(got), want) {
		t.Errorf("choose = %v, %v; want %v", names(got), err, want)
	}
	for _, bad := range []string{"no-such-lock", "(("} {
		if cs, err := choose(bad); err == nil {
			t.Errorf("choose(%q) = %v; want an error", bad, names(cs))
		}
	}
}
