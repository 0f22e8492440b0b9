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

// Change is what became of a watched key around one Observe.
type Change struct {
	// Expired is the value that ran out before the command acted (Exists false if none did).
	Expired Value
	// Unseen reports that the key changed since the last Observe in a way expiry cannot explain:
	// a command the watcher did not see (a client outside the arena, an admin write) touched it.
	Unseen bool
	// Before is the key as the command found it; After is the key once the command had run. Any
	// difference between them is the command's doing, unless Ambiguous.
	Before, After Value
	// Ambiguous reports that the watcher cannot rule out that Before expired while the command
	// ran (a backend without exact observation): a vanished value may be expiry, not a delete.
	Ambiguous bool
}

// Watcher is the referee's eye on one key of one lock node. Each call is atomic with respect to
// the others. Hazard: exactness needs every command that touches the node to pass through
// Observe, one at a time; the arena serialises them.
type Watcher interface {
	// Observe runs send, which sends one command, pipeline or transaction to the node, and
	// reports what became of the key: send is given the key's value as the command will find it.
	// An error means the watcher could not see, not that the command failed; send has run
	// whenever the error is not from before it.
	Observe(ctx context.Context, send func(before Value)) (Change, error)
	// Peek reads the key now: its value and remaining lease (-1 when it has no expiry, 0 when the
	// key does not exist).
	Peek(ctx context.Context) (Value, time.Duration, error)
	// Resync forgets what the watcher knew and reads the key afresh: the node's data changed under
	// it on purpose (a failover, a restart), which is not an unseen write.
	Resync(ctx context.Context) (Value, error)
	// Close releases what the watcher holds (a subscriber connection).
	Close() error
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
