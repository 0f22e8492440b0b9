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
// there while it reads every key under the prefix, runs the command and reads them again, so
// nothing can expire in between: whatever changed was the command's doing. Between observations
// the clock stands still too, so every expiry is noticed, on the right side of a command, by the
// next Observe or Peek; a change between observations that expiry cannot have made comes from a
// connection no process claimed (the node counts what those send), and is Unseen.
//
// Hazard: a client that bypasses the watcher (the lab's own admin reads excepted, which only read)
// sees a clock that stands still between observations.
type frozenWatcher struct {
	n              *embNode
	prefix, except string

	mu        *durable.Mutex // held across the observed command's round trip
	last      snapshot       // every key after the last Observe or Resync
	strangers int64          // the node's unclaimed commands, as of last
	hear      *embListener   // what is published on the current primary (guarded by mu)
}

func newFrozenWatcher(n *embNode, prefix, except string) (*frozenWatcher, error) {
	w := &frozenWatcher{n: n, prefix: prefix, except: except, mu: durable.New()}
	if _, err := w.Resync(context.Background()); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// listener is the listener on m, the current primary: a failover or restart brought a new one,
// which is listened to afresh. The caller holds mu.
func (w *frozenWatcher) listener(m *miniredis.Miniredis) *embListener {
	if w.hear != nil && w.hear.m != m {
		w.hear.close()
		w.hear = nil
	}
	if w.hear == nil {
		w.hear = newEmbListener(m, w.prefix)
	}
	return w.hear
}

// Observe implements Watcher.
func (w *frozenWatcher) Observe(ctx context.Context, send func()) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, now := w.n.freeze()
	hear := w.listener(m)
	hear.drain() // published between observations: not the command's
	cur, err := readAll(m, w.prefix, w.except, now)
	if err != nil {
		send()
		return Change{}, err
	}
	var ch Change
	moved := withTTL(diff(w.last, cur), cur, now)
	if strangers := w.n.strangers(); strangers != w.strangers {
		w.strangers = strangers
		ch.Unseen = moved
	} else {
		// The clock alone moves between observations: expiry, at the deadline it had.
		for i := range moved {
			moved[i].Ran = w.last[moved[i].Key].deadline
		}
		ch.Lapsed = moved
	}
	send()
	ch.Published = hear.drain()
	w.strangers = w.n.strangers() // what went out during the observation is the observed command
	if w.n.current() != m {
		return ch, errors.New("redisenv: the lock node failed over while a command ran on it")
	}
	after, err := readAll(m, w.prefix, w.except, now)
	if err != nil {
		return ch, err
	}
	ch.Keys = withTTL(diff(cur, after), after, now)
	w.last = after
	return ch, nil
}

// ObserveAll implements Watcher: Observe already reads every key after the command.
func (w *frozenWatcher) ObserveAll(ctx context.Context, send func()) (Change, error) {
	return w.Observe(ctx, send)
}

// Peek implements Watcher.
func (w *frozenWatcher) Peek(ctx context.Context, key string) (Value, time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, _ := w.n.freeze()
	v, ttl, err := readKey(m, w.prefix+key)
	if v.Exists {
		v.Text = frozenText(m, w.prefix+key)
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
func (w *frozenWatcher) Resync(ctx context.Context) ([]KeyValue, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, now := w.n.freeze()
	w.listener(m).drain()
	s, err := readAll(m, w.prefix, w.except, now)
	if err != nil {
		return nil, err
	}
	w.last, w.strangers = s, w.n.strangers()
	return s.list(now), nil
}

// Close implements Watcher: it stops listening.
func (w *frozenWatcher) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.hear != nil {
		w.hear.close()
		w.hear = nil
	}
	return nil
}

// readAll reads every key of m under prefix but not under prefix+except, at now on m's (frozen) clock.
func readAll(m *miniredis.Miniredis, prefix, except string, now time.Time) (snapshot, error) {
	s := snapshot{}
	for _, k := range m.Keys() {
		if !strings.HasPrefix(k, prefix) || (except != "" && strings.HasPrefix(k, prefix+except)) {
			continue
		}
		v, ttl, err := readKey(m, k)
		if err != nil {
			return nil, err
		}
		if !v.Exists {
			continue
		}
		kn := known{v: v}
		if ttl > 0 {
			kn.deadline = now.Add(ttl)
		}
		s[strings.TrimPrefix(k, prefix)] = kn
	}
	return s, nil
}

// list is s as KeyValues, sorted by key, with their TTLs at now.
func (s snapshot) list(now time.Time) []KeyValue {
	var out []KeyValue
	for _, k := range unionKeys(s, nil) {
		kn := s[k]
		ttl := time.Duration(-1)
		if !kn.deadline.IsZero() {
			ttl = max(kn.deadline.Sub(now), 0)
		}
		out = append(out, KeyValue{Key: k, Value: kn.v, TTL: ttl})
	}
	return out
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
