package explore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// requestLock is a lock whose owner is the request (its context's token), as 12–16's are, with no
// randomness in its timing: a refused Lock tries again a fixed TTL/4 later. Two requests of one
// process contend for it; with the second fault, the second request's Lock begins at the
// instant the first's Unlock does, and both calls' first commands leave together.
type requestLock struct {
	rdb *redis.Client
	ttl time.Duration
}

type ownerKey struct{}

var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *requestLock) Lock(ctx context.Context, key string) (bool, error) {
	for range 40 {
		ok, err := l.rdb.SetNX(ctx, key, ctx.Value(ownerKey{}), l.ttl).Result()
		if err != nil || ok {
			return ok, err
		}
		select {
		case <-time.After(l.ttl / 4):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return false, nil
}

func (l *requestLock) Unlock(ctx context.Context, key string) error {
	n, err := release.Run(ctx, l.rdb, []string{key}, ctx.Value(ownerKey{})).Int()
	if err == nil && n == 0 {
		return steps.ErrNotOwner
	}
	return err
}

func requestOrder(ctx context.Context, l steps.Locker, s steps.Shop) (err error) {
	b := make([]byte, 8)
	rand.Read(b)
	ctx = context.WithValue(ctx, ownerKey{}, hex.EncodeToString(b))
	key := s.LockKey()
	ok, err := l.Lock(ctx, key)
	if err != nil || !ok {
		return steps.ErrBusy
	}
	defer func() {
		if uerr := l.Unlock(context.WithoutCancel(ctx), key); err == nil {
			err = uerr
		}
	}()
	n, err := s.Stock(ctx)
	if err != nil || n <= 0 {
		return steps.ErrSoldOut
	}
	if err := s.Work(ctx); err != nil {
		return err
	}
	return s.SetStock(ctx, n-1)
}

// TestTwoCallsOfOneInstant: two requests of one process whose calls' commands leave at one
// instant (the second fault: the second request's Lock begins as the first's Unlock does) reach
// the server in the order the calls began, on every play: the Unlock's first, so the second
// request's SET NX finds the lock free. Before (arena, 2026-11-28), they arrived at one instant
// in the Go scheduler's order, and 12's lease guard under explore seed 1 was judged idle in one
// play and ✓ in the next.
func TestTwoCallsOfOneInstant(t *testing.T) {
	noLeak(t)
	st := &steps.Step{Slug: "request_lock", Title: "a request's lock", Order: requestOrder,
		New: func(p steps.Proc) steps.Locker { return &requestLock{rdb: p.Redis, ttl: p.TTL} }}
	// The first order sells the only unit; the second finds the shelf empty and unlocks at once,
	// the instant its second fault (struck at the Unlock, there being no work) begins a request.
	p := explore.Program{Stock: 1, Buyers: []explore.Buyer{{Orders: []explore.Order{{}, {Fault: arena.FaultSecond}}}}}
	onePlay(t, st, p)
}

// quorumLock is requestLock on every lock node at once, a goroutine a node, as a quorum lock
// sends (without a quorum's arithmetic: it holds only where all three said yes).
type quorumLock struct {
	nodes []*redis.Client
	ttl   time.Duration
}

// all runs f on every node at once and says whether each answered true.
func (l *quorumLock) all(f func(*redis.Client) bool) bool {
	var wg sync.WaitGroup
	oks := make([]bool, len(l.nodes))
	for i, n := range l.nodes {
		wg.Go(func() { oks[i] = f(n) })
	}
	wg.Wait()
	for _, ok := range oks {
		if !ok {
			return false
		}
	}
	return true
}

func (l *quorumLock) Lock(ctx context.Context, key string) (bool, error) {
	for range 40 {
		if l.all(func(n *redis.Client) bool { return n.SetNX(ctx, key, ctx.Value(ownerKey{}), l.ttl).Val() }) {
			return true, nil
		}
		l.all(func(n *redis.Client) bool {
			return release.Run(ctx, n, []string{key}, ctx.Value(ownerKey{})).Err() == nil
		})
		select {
		case <-time.After(l.ttl / 4):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return false, nil
}

func (l *quorumLock) Unlock(ctx context.Context, key string) error {
	if !l.all(func(n *redis.Client) bool {
		return release.Run(ctx, n, []string{key}, ctx.Value(ownerKey{})).Val() == int64(1)
	}) {
		return steps.ErrNotOwner
	}
	return nil
}

// TestOneInstantToThreeNodes: a process's commands to three lock nodes that leave at one instant
// (a goroutine a node) go out in the nodes' order, on every play: an unlock-race freezes before
// the first node's release, and holds the other two. Before (arena, 2026-11-28), which goroutine
// the scheduler ran first decided which release it froze before and which went out unfrozen,
// and 15's Redlock under explore seed 1 was judged idle in one play and ✓ in the next.
func TestOneInstantToThreeNodes(t *testing.T) {
	noLeak(t)
	st := &steps.Step{Slug: "quorum_lock", Title: "a lock on three nodes", Nodes: 3, Order: requestOrder,
		New: func(p steps.Proc) steps.Locker { return &quorumLock{nodes: p.Nodes, ttl: p.TTL} }}
	p := explore.Program{Stock: 2, Buyers: []explore.Buyer{
		{Orders: []explore.Order{{Fault: arena.FaultUnlockRace}}},
		{Orders: []explore.Order{{After: 1}}}}}
	onePlay(t, st, p)
}

// onePlay plays p against st ten times and fails at the first history that is not the first's.
func onePlay(t *testing.T, st *steps.Step, p explore.Program) {
	t.Helper()
	var first string
	for i := range 10 {
		r, err := explore.Run(st, p, nil, bubble(t))
		if err != nil {
			t.Fatal(err)
		}
		h := canonical(t, r.History)
		if i == 0 {
			first = h
			continue
		}
		if h != first {
			t.Fatalf("play %d of one program differs from the first:\n%s\n%s", i+1, first, h)
		}
	}
}
