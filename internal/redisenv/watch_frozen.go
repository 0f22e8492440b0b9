package redisenv

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockstep-lab/lockstep/internal/durable"
)

// frozenWatcher is the embedded backend's exact watcher. miniredis expires keys lazily, whenever a
// command touches its database, against its clock; the watcher sets that clock to now and holds it
// there while it reads the key, runs the command and reads the key again, so nothing can expire in
// between: whatever changed was the command's doing. Between observations the clock stands still
// too, so every expiry is noticed, on the right side of a command, by the next Observe or Peek.
//
// Hazard: a client that bypasses the watcher (the lab's own admin reads excepted, which only read)
// sees a clock that stands still between observations.
type frozenWatcher struct {
	n   *embNode
	key string

	mu       *durable.Mutex // held across the observed command's round trip
	last     Value          // the key after the last Observe or Resync
	deadline time.Time      // when last expires on the node's clock; zero if it has no expiry
}

func newFrozenWatcher(n *embNode, key string) (*frozenWatcher, error) {
	w := &frozenWatcher{n: n, key: key, mu: durable.New()}
	if _, err := w.Resync(context.Background()); err != nil {
		return nil, err
	}
	return w, nil
}

// Observe implements Watcher.
func (w *frozenWatcher) Observe(ctx context.Context, send func(before Value)) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, now := w.n.freeze()
	before, _, err := readKey(m, w.key)
	if err != nil {
		send(before)
		return Change{}, err
	}
	ch := Change{Before: before}
	if before != w.last {
		if w.last.Exists && !w.deadline.IsZero() && !now.Before(w.deadline) {
			ch.Expired = w.last
			ch.Unseen = before.Exists
		} else {
			ch.Unseen = true
		}
	}
	send(before)
	if w.n.current() != m {
		return ch, errors.New("redisenv: the lock node failed over while a command ran on it")
	}
	after, ttl, err := readKey(m, w.key)
	if err != nil {
		return ch, err
	}
	ch.After = after
	w.remember(after, now, ttl)
	return ch, nil
}

// Peek implements Watcher.
func (w *frozenWatcher) Peek(ctx context.Context) (Value, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, _ := w.n.freeze()
	v, ttl, err := readKey(m, w.key)
	if v.Exists {
		v.Text = frozenText(m, w.key)
	}
	return v, ttl, err
}

// frozenText is valueText for a miniredis.
func frozenText(m *miniredis.Miniredis, key string) string {
	switch t := m.Type(key); t {
	case "string":
		v, _ := m.Get(key)
		return v
	case "hash":
		fields, _ := m.HKeys(key)
		slices.Sort(fields)
		for i, f := range fields {
			fields[i] = f + "=" + m.HGet(key, f)
		}
		return strings.Join(fields, ", ")
	case "":
		return ""
	default:
		return "(a " + t + ")"
	}
}

// Resync implements Watcher.
func (w *frozenWatcher) Resync(ctx context.Context) (Value, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, now := w.n.freeze()
	v, ttl, err := readKey(m, w.key)
	if err != nil {
		return v, err
	}
	w.remember(v, now, ttl)
	return v, nil
}

// Close implements Watcher: there is nothing to release.
func (w *frozenWatcher) Close() error { return nil }

func (w *frozenWatcher) remember(v Value, now time.Time, ttl time.Duration) {
	w.last, w.deadline = v, time.Time{}
	if v.Exists && ttl > 0 {
		w.deadline = now.Add(ttl)
	}
}

// current is the primary now.
func (n *embNode) current() *miniredis.Miniredis {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.primary.m
}

// freeze sets the current primary's clock to now (never backwards) and returns the primary and
// the time it was set to. Keys due by then expire at the primary's next database access.
func (n *embNode) freeze() (*miniredis.Miniredis, time.Time) {
	n.clockMu.Lock()
	defer n.clockMu.Unlock()
	m := n.current()
	now := time.Now()
	if now.Before(n.clock) {
		now = n.clock
	}
	n.clock = now
	m.SetTime(now)
	return m, now
}

// readKey reads key on m directly: its value's print and its remaining TTL (-1 without one, 0 if
// the key does not exist).
func readKey(m *miniredis.Miniredis, key string) (Value, time.Duration, error) {
	t := m.Type(key)
	if t == "" {
		return Value{}, 0, nil
	}
	ttl := m.TTL(key)
	if ttl == 0 {
		ttl = -1
	}
	var b strings.Builder
	b.WriteString(t + ":")
	var err error
	switch t {
	case "string":
		var v string
		v, err = m.Get(key)
		b.WriteString(v)
	case "hash":
		var fields []string
		fields, err = m.HKeys(key)
		slices.Sort(fields)
		for _, f := range fields {
			b.WriteString(strconv.Quote(f) + "=" + strconv.Quote(m.HGet(key, f)) + ";")
		}
	case "list":
		var items []string
		items, err = m.List(key)
		for _, it := range items {
			b.WriteString(strconv.Quote(it) + ";")
		}
	case "set":
		var items []string
		items, err = m.Members(key)
		slices.Sort(items)
		for _, it := range items {
			b.WriteString(strconv.Quote(it) + ";")
		}
	case "zset":
		var items map[string]float64
		items, err = m.SortedSet(key)
		names := make([]string, 0, len(items))
		for n := range items {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			b.WriteString(strconv.Quote(n) + "=" + strconv.FormatFloat(items[n], 'g', -1, 64) + ";")
		}
	default:
		return Value{}, 0, errors.New("redisenv: the watcher cannot read a " + t + " key")
	}
	if err != nil {
		return Value{}, 0, err
	}
	return Value{Exists: true, Print: b.String()}, ttl, nil
}
