package redisenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pollWatcher is the fallback watcher for a server that will not publish keyspace events (its
// CONFIG is not ours to change): it reads the key and its remaining TTL in one MULTI before the
// command and again after it. It is exact except near an expiry: when the key had less time left
// than the observation took (plus a margin), a value that vanished may have expired, and it says
// so (Change.Ambiguous) instead of guessing.
type pollWatcher struct {
	key   string
	admin *redis.Client

	mu       sync.Mutex
	last     Value
	deadline time.Time // the earliest last can expire, by this process's clock; zero without expiry
}

// pollMargin is how far from an expiry an observation must stay to count as exact: clock
// granularity on the server and scheduling here.
const pollMargin = 2 * time.Millisecond

func newPollWatcher(key string, admin *redis.Client) (*pollWatcher, error) {
	w := &pollWatcher{key: key, admin: admin}
	if _, err := w.Resync(context.Background()); err != nil {
		return nil, err
	}
	return w, nil
}

// readTTL reads the value and its remaining TTL atomically, with the local times the read began
// and ended.
func (w *pollWatcher) readTTL(ctx context.Context) (v Value, ttl time.Duration, began, ended time.Time, err error) {
	began = time.Now()
	var dump *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err = w.admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
		dump = p.Dump(ctx, w.key)
		pttl = p.PTTL(ctx, w.key)
		return nil
	})
	ended = time.Now()
	if err == redis.Nil || (dump != nil && dump.Err() == redis.Nil) {
		return Value{}, 0, began, ended, nil
	}
	if err != nil {
		return Value{}, 0, began, ended, fmt.Errorf("redisenv: the referee cannot read the lock (DUMP, PTTL): %w", err)
	}
	return Value{Exists: true, Print: "dump:" + dump.Val()}, pttl.Val(), began, ended, nil
}

// Observe implements Watcher.
func (w *pollWatcher) Observe(ctx context.Context, send func(before Value)) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before, ttl, t0, t1, err := w.readTTL(ctx)
	if err != nil {
		send(w.last)
		return Change{}, err
	}
	ch := Change{Before: before}
	if before != w.last {
		if w.last.Exists && !w.deadline.IsZero() && !t1.Add(pollMargin).Before(w.deadline) {
			ch.Expired = w.last
			ch.Unseen = before.Exists
		} else {
			ch.Unseen = true
		}
	}
	send(before)
	after, attl, t2, t3, err := w.readTTL(ctx)
	if err != nil {
		return ch, err
	}
	ch.After = after
	// The key's deadline as read before the command; if it could have passed by the end of
	// the after-read, a vanished or replaced value may be Redis's doing.
	ch.Ambiguous = before.Exists && ttl >= 0 && t0.Add(ttl).Before(t3.Add(pollMargin))
	w.remember(after, attl, t2)
	return ch, nil
}

// remember keeps v as the key's value, read with ttl left by a read that began at began: the key
// expires no earlier than began + ttl.
func (w *pollWatcher) remember(v Value, ttl time.Duration, began time.Time) {
	w.last, w.deadline = v, time.Time{}
	if v.Exists && ttl >= 0 {
		w.deadline = began.Add(ttl)
	}
}

// Peek implements Watcher.
func (w *pollWatcher) Peek(ctx context.Context) (Value, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ttl, _, _, err := w.readTTL(ctx)
	if v.Exists {
		v.Text = valueText(ctx, w.admin, w.key)
	}
	return v, ttl, err
}

// Resync implements Watcher.
func (w *pollWatcher) Resync(ctx context.Context) (Value, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ttl, t0, _, err := w.readTTL(ctx)
	if err != nil {
		return v, err
	}
	w.remember(v, ttl, t0)
	return v, nil
}

// Close implements Watcher: there is nothing to release.
func (w *pollWatcher) Close() error { return nil }
