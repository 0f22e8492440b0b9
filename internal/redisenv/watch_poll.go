package redisenv

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pollWatcher is the fallback watcher for a server that will not publish keyspace events (its
// CONFIG is not ours to change): it lists the keys under the prefix and reads each one with its
// remaining TTL before the command and again after it. It is exact except near an expiry: when a
// key had less time left than the observation took (plus a margin), a value that vanished may
// have expired, and it says so (Change.Ambiguous) instead of guessing.
type pollWatcher struct {
	prefix, except string
	admin          *redis.Client

	mu   sync.Mutex
	last snapshot
}

// pollMargin is how far from an expiry an observation must stay to count as exact: clock
// granularity on the server and scheduling here.
const pollMargin = 2 * time.Millisecond

func newPollWatcher(prefix, except string, admin *redis.Client) (*pollWatcher, error) {
	w := &pollWatcher{prefix: prefix, except: except, admin: admin}
	if _, err := w.Resync(context.Background()); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *pollWatcher) read(ctx context.Context) (snapshot, time.Time, error) {
	s, began, err := readPrefix(ctx, w.admin, w.prefix)
	return without(s, w.except), began, err
}

// Observe implements Watcher.
func (w *pollWatcher) Observe(ctx context.Context, send func()) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before, t1, err := w.read(ctx)
	if err != nil {
		send()
		return Change{}, err
	}
	var ch Change
	for _, m := range withTTL(diff(w.last, before), before, t1) {
		was := w.last[m.Key]
		if !m.After.Exists && !was.deadline.IsZero() && !t1.Add(pollMargin).Before(was.deadline) {
			ch.Lapsed = append(ch.Lapsed, m)
		} else {
			ch.Unseen = append(ch.Unseen, m)
		}
	}
	send()
	after, t3, err := w.read(ctx)
	if err != nil {
		return ch, err
	}
	ch.Keys = withTTL(diff(before, after), after, t3)
	for _, k := range ch.Keys {
		// A key whose deadline, as read before the command, could have passed by the end of the
		// after-read: a vanished value may be Redis's doing.
		if b := before[k.Key]; !k.After.Exists && !b.deadline.IsZero() && b.deadline.Before(t3.Add(pollMargin)) {
			ch.Ambiguous = true
		}
	}
	w.last = after
	return ch, nil
}

// ObserveAll implements Watcher: Observe already reads every key after the command.
func (w *pollWatcher) ObserveAll(ctx context.Context, send func()) (Change, error) {
	return w.Observe(ctx, send)
}

// Peek implements Watcher.
func (w *pollWatcher) Peek(ctx context.Context, key string) (Value, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return peekKey(ctx, w.admin, w.prefix+key)
}

// Resync implements Watcher.
func (w *pollWatcher) Resync(ctx context.Context) ([]KeyValue, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, now, err := w.read(ctx)
	if err != nil {
		return nil, err
	}
	w.last = s
	return s.list(now), nil
}

// Close implements Watcher: there is nothing to release.
func (w *pollWatcher) Close() error { return nil }

// without is s less the keys under except ("" keeps them all).
func without(s snapshot, except string) snapshot {
	if except == "" {
		return s
	}
	for k := range s {
		if strings.HasPrefix(k, except) {
			delete(s, k)
		}
	}
	return s
}
