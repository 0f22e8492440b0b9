package redisenv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Value is a key's value as a watcher saw it: whether the key exists, and an opaque fingerprint
// of its value (equal values give equal prints; the TTL is not part of it). Text, set by Peek
// only, is the value in words for a person: a string's value, a hash's fields.
type Value struct {
	Exists bool
	Print  string
	Text   string
}

// KeyChange is what became of one key: its value before and after, and the lease it has after
// (TTL: -1 when it has no expiry, 0 when After does not exist). Key is the key's name without the
// watcher's prefix.
type KeyChange struct {
	Key           string
	Before, After Value
	TTL           time.Duration
	// Ran is when a lapsed key ran out, where the watcher knows it (the embedded backend's frozen
	// clock does); zero otherwise: it was noticed at the observation.
	Ran time.Time
}

// Gone reports whether the key does not exist after the change.
func (k KeyChange) Gone() bool { return !k.After.Exists }

// Change is what became of the watched keys around one Observe.
type Change struct {
	// Keys is the command's doing: every key whose value or expiry it changed, by name.
	Keys []KeyChange
	// Lapsed is Redis's own doing since the last observation, before the command acted: keys
	// that expired (After does not exist) or lost an expired hash field.
	Lapsed []KeyChange
	// Unseen is what something the watcher did not see changed since the last observation: a
	// client outside the arena's processes, an admin write.
	Unseen []KeyChange
	// Ambiguous reports that the watcher cannot rule out that a key of Keys that vanished
	// expired while the command ran (a backend without exact observation).
	Ambiguous bool
	// Published is what the command published, in order. Hazard: the embedded watcher hears every
	// channel (its node is the run's own), the notifying one the channels under the prefix only
	// (a server may be shared), the poll watcher nothing.
	Published []Message
}

// KeyValue is one key as a watcher read it: its value and remaining lease (-1: no expiry).
type KeyValue struct {
	Key   string
	Value Value
	TTL   time.Duration
}

// Watcher is the referee's eye on every key of one lock node under the run's prefix. Each call
// is atomic with respect to the others. Hazard: exactness needs every command that touches the
// node to pass through Observe (or ObserveAll), one at a time; the arena serialises them.
type Watcher interface {
	// Observe runs send, which sends one command, pipeline or transaction to the node, and
	// reports what became of the keys. An error means the watcher could not see, not that the
	// command failed; send has run whenever the error is not from before it. Hazard: the
	// notifying watcher (server, sentinel, container backends; a URL server with keyspace
	// events) knows a key changed by the event Redis publishes for it, and Redis publishes none
	// for what FLUSHDB, FLUSHALL or SWAPDB do: send such a command through ObserveAll.
	Observe(ctx context.Context, send func()) (Change, error)
	// ObserveAll is Observe for a command that may change keys it does not name (FLUSHDB,
	// SWAPDB: see ChangesUnnamed): after send it reads every key under the prefix, so Change.Keys
	// has every key the command changed, whether or not the node published an event for it. It
	// costs a read of every key of the run (SCAN, then DUMP and PTTL of each) where Observe
	// reads the keys the events name; the embedded and poll watchers read every key anyway.
	ObserveAll(ctx context.Context, send func()) (Change, error)
	// Peek reads one key now (its name without the prefix): its value with Text, and remaining
	// lease (-1 when it has no expiry, 0 when the key does not exist).
	Peek(ctx context.Context, key string) (Value, time.Duration, error)
	// Resync forgets what the watcher knew and reads every key afresh: the node's data changed
	// under it on purpose (a failover, a restart), which is not an unseen write.
	Resync(ctx context.Context) ([]KeyValue, error)
	// Close releases what the watcher holds (a subscriber connection).
	Close() error
}

// ChangesUnnamed reports whether the command named name (any case) may change keys it does not
// name and publishes no keyspace event for them, so a watcher must read every key after it
// (Watcher.ObserveAll): FLUSHDB, FLUSHALL, SWAPDB, DEBUG (RELOAD and its kin reload the
// dataset), REPLICAOF and SLAVEOF (a full sync replaces it), MIGRATE. Hazard: it goes by the
// name alone. A script (EVAL, EVALSHA, FCALL) may call FLUSHDB too, and is not listed: what
// every other command a script calls changes is published, and reading every key after every
// script is the arena's choice to make.
func ChangesUnnamed(name string) bool {
	switch strings.ToLower(name) {
	case "flushdb", "flushall", "swapdb", "debug", "replicaof", "slaveof", "migrate":
		return true
	}
	return false
}

// snapshot is what a watcher knows of the node's keys: each one's value and the moment its lease
// ends on the watcher's clock (zero: no expiry).
type snapshot map[string]known

// known is one key as a watcher read it. A watcher that reads a lease over the network (PTTL)
// knows its end only within a window: the server answered at some moment between the read's
// start and its reply, in whole milliseconds. deadline is the earliest the lease can end, latest
// the last (zero: exactly deadline, as the embedded watcher reads it).
type known struct {
	v        Value
	deadline time.Time
	latest   time.Time
}

// end is the last moment the key's lease can end.
func (k known) end() time.Time {
	if k.latest.IsZero() {
		return k.deadline
	}
	return k.latest
}

// sameLease reports whether a and b can be the same lease: both without expiry, or with windows
// that meet. Hazard: a renewal within the window's width (a read's round trip) is taken for the
// lease it renewed; that is the price of not calling the read's own jitter a change.
func sameLease(a, b known) bool {
	if a.deadline.IsZero() || b.deadline.IsZero() {
		return a.deadline.IsZero() && b.deadline.IsZero()
	}
	return !a.end().Before(b.deadline) && !b.end().Before(a.deadline)
}

// diff lists the keys whose value differs between before and after, or whose lease ends at another
// moment, sorted by name; their TTLs are set by withTTL.
func diff(before, after snapshot) []KeyChange {
	var out []KeyChange
	for _, k := range unionKeys(before, after) {
		b, a := before[k], after[k]
		if b.v == a.v && sameLease(b, a) {
			continue
		}
		out = append(out, KeyChange{Key: k, Before: b.v, After: a.v})
	}
	return out
}

func unionKeys(a, b snapshot) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// withTTL sets each change's TTL from its key's deadline in s, as seen at now.
func withTTL(chs []KeyChange, s snapshot, now time.Time) []KeyChange {
	for i := range chs {
		k := s[chs[i].Key]
		switch {
		case !k.v.Exists:
			chs[i].TTL = 0
		case k.deadline.IsZero():
			chs[i].TTL = -1
		default:
			chs[i].TTL = max(k.deadline.Sub(now), 0)
		}
	}
	return chs
}

// valueText reads key for a person: a string's value, a hash's fields sorted by name, or its type.
// It is a second read, for display only: the key may have changed since the Value was printed.
func valueText(ctx context.Context, c *redis.Client, key string) string {
	t, err := c.Type(ctx, key).Result()
	if err != nil {
		return "?"
	}
	switch t {
	case "string":
		return c.Get(ctx, key).Val()
	case "hash":
		h := c.HGetAll(ctx, key).Val()
		fields := make([]string, 0, len(h))
		for f, v := range h {
			fields = append(fields, f+"="+v)
		}
		slices.Sort(fields)
		return strings.Join(fields, ", ")
	case "none":
		return ""
	}
	return fmt.Sprintf("(a %s)", t)
}
