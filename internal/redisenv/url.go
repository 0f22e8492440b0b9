package redisenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL is the backend of an existing Redis server (redis://host:port[/db] or rediss://…): the lock
// server and the inventory are that one node, so it cannot fail over. A run reads and writes only
// keys under its prefix, and Close deletes those with SCAN MATCH + DEL.
//
// Hazard: the server is shared with whatever else uses it. Never point it at a server whose
// keyspace could hold keys under "lockstep:"; Close deletes every key under the run's prefix.
type URL struct {
	prefix  string
	shown   string // the URL without its password, for messages
	opts    *redis.Options
	admin   *redis.Client
	guard   *guard // every buyer's client's hook: the run touches its own keys only
	cleaned sync.Once
	err     error
}

// reachTimeout bounds the PING that checks the server is there.
const reachTimeout = 2 * time.Second

// parseURL reads a redis:// URL, and gives it back with its password hidden, for messages.
func parseURL(raw string) (opts *redis.Options, shown string, err error) {
	shown = raw
	if u, err := url.Parse(raw); err == nil {
		shown = u.Redacted()
	}
	opts, err = redis.ParseURL(raw)
	if err != nil {
		return nil, shown, nameError(fmt.Sprintf("bad Redis URL %s: %v", shown, oneLine(err)))
	}
	return opts, shown, nil
}

// NewURL connects to the server raw names and checks with PING (2 s) that it answers.
func NewURL(raw string) (*URL, error) {
	opts, shown, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
	defer cancel()
	// A plain dial first: go-redis would retry a refused dial and log each failure.
	network := opts.Network
	if network == "" {
		network = "tcp"
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("redisenv: cannot reach %s: %v", shown, oneLine(err))
	}
	c.Close()
	u := &URL{prefix: newPrefix(), shown: shown, opts: opts}
	u.admin = redis.NewClient(u.options())
	if err := u.admin.Ping(ctx).Err(); err != nil {
		u.admin.Close()
		return nil, fmt.Errorf("redisenv: cannot reach %s: %v", shown, oneLine(err))
	}
	// The guard finds each command's keys where the server does: in its own command table.
	o := u.options()
	o.Protocol = 2 // COMMAND's key specifications as flat lists
	lister := redis.NewClient(o)
	cmds, err := readCommands(ctx, lister)
	lister.Close()
	if err != nil {
		u.admin.Close()
		return nil, fmt.Errorf("redisenv: %s does not list its commands (COMMAND), which the lab needs to keep a run to its own keys: %v", shown, oneLine(err))
	}
	u.guard = newGuard(u.prefix, opts.DB, cmds)
	register(u)
	return u, nil
}

// oneLine flattens an error message to one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// options returns a fresh copy of the parsed options.
func (u *URL) options() *redis.Options {
	o := *u.opts
	if o.TLSConfig != nil {
		o.TLSConfig = o.TLSConfig.Clone()
	}
	return &o
}

// Backend returns "url".
func (u *URL) Backend() string { return "url" }

// Prefix returns the run's key prefix.
func (u *URL) Prefix() string { return u.prefix }

// LockOptions configures a client of the server.
func (u *URL) LockOptions() *redis.Options { return u.options() }

// Nodes is the one lock node: the server itself.
func (u *URL) Nodes() []Node { return []Node{urlNode{u}} }

// urlNode is the URL's server as a lock node.
type urlNode struct{ u *URL }

func (n urlNode) Name() string             { return "lock" }
func (n urlNode) Options() *redis.Options  { return n.u.options() }
func (n urlNode) NewClient() *redis.Client { return redis.NewClient(n.Options()) }
func (n urlNode) Admin() *redis.Client     { return n.u.admin }
func (n urlNode) CanFailover() bool        { return false }
func (n urlNode) CanRestart() bool         { return false }
func (n urlNode) Outage() time.Duration    { return 0 }
func (n urlNode) HoldReplication()         {}
func (n urlNode) Failover(ctx context.Context) error {
	return errors.New("redisenv: the url backend is a single existing server; it cannot fail over")
}

// Hook is the guard (see guard): a buyer's command that would read or write a key outside the
// run's prefix, or act beyond the keys it names (FLUSHDB, KEYS *, CONFIG…), is refused with a
// Refusal and never sent. Hazard: it guards only the clients it is added to; a Locker's own
// client bypasses it.
func (n urlNode) Hook() redis.Hook { return n.u.guard }

// Refusals is every command the guard has refused so far, in order (see Hook).
func (u *URL) Refusals() []Refusal { return u.guard.refusals() }

// Restart refuses: restarting a server the lab does not own is not the lab's to do.
func (n urlNode) Restart(context.Context) error {
	return errors.New("redisenv: the url backend is an existing server; the lab does not restart it")
}

// Lacks asks the server (COMMAND INFO, INFO server); neither changes anything.
func (n urlNode) Lacks(ctx context.Context, cmds []string) ([]string, string, error) {
	return askLacks(ctx, n.u.admin, cmds)
}

// Watch watches the keys under prefix exactly through keyspace events if the server already publishes them
// (notify-keyspace-events with K and every class); otherwise by reading the key before and after
// each command, which is exact except near an expiry and says so. It never changes the server's
// configuration: that is not the lab's to touch.
func (n urlNode) Watch(prefix, except string) (Watcher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), reachTimeout)
	defer cancel()
	if publishesKeyspaceEvents(ctx, n.u.admin) {
		return newNotifyWatcher(prefix, except, n.u.opts.DB, n.u.options(), n.u.admin)
	}
	return newPollWatcher(prefix, except, n.u.admin)
}

// publishesKeyspaceEvents reports whether the server publishes every keyspace event the notifying
// watcher needs; false also when CONFIG GET is refused.
func publishesKeyspaceEvents(ctx context.Context, c *redis.Client) bool {
	cfg, err := c.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return false
	}
	flags := cfg["notify-keyspace-events"]
	if !strings.ContainsRune(flags, 'K') {
		return false
	}
	if strings.ContainsRune(flags, 'A') {
		return true
	}
	for _, c := range "g$lshzxe" {
		if !strings.ContainsRune(flags, c) {
			return false
		}
	}
	return true
}

// InventoryOptions configures a client of the same server: the inventory shares it with the lock.
func (u *URL) InventoryOptions() *redis.Options { return u.options() }

// Admin is an uncounted client of the server.
func (u *URL) Admin() *redis.Client { return u.admin }

// CanFailover is false: one node has no replica to promote.
func (u *URL) CanFailover() bool { return false }

// HoldReplication does nothing: there is no replication to hold.
func (u *URL) HoldReplication() {}

// Failover refuses: killing a server the lab does not own is not the lab's to do.
func (u *URL) Failover(context.Context) error {
	return errors.New("redisenv: the url backend is a single existing server; it cannot fail over")
}

// Close deletes every key under the run's prefix (SCAN MATCH, then DEL; never KEYS or FLUSH) and
// closes the admin client. It may be called more than once.
func (u *URL) Close() error {
	u.cleaned.Do(func() {
		defer unregister(u) // last, so a racing CloseAll waits for the keys to be gone
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		u.err = DeletePrefix(ctx, u.admin, u.prefix)
		u.admin.Close()
	})
	return u.err
}

// DeletePrefix deletes every key of c's database whose name starts with prefix, by SCAN MATCH and
// DEL in batches. Hazard: a key written under prefix while it runs may survive.
func DeletePrefix(ctx context.Context, c *redis.Client, prefix string) error {
	if prefix == "" {
		return errors.New("redisenv: refusing to delete keys under an empty prefix")
	}
	pattern := globEscape(prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return fmt.Errorf("redisenv: scanning %s*: %w", prefix, err)
		}
		var mine []string
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) { // belt and braces over the glob
				mine = append(mine, k)
			}
		}
		if len(mine) > 0 {
			if err := c.Del(ctx, mine...).Err(); err != nil {
				return fmt.Errorf("redisenv: deleting keys under %s: %w", prefix, err)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// globEscape escapes the characters SCAN MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Strangers says nothing: an existing server has clients of its own, which the lab cannot tell
// from a Locker's; a stranger shows only by what it changes under the run's prefix.
func (u *URL) Strangers(context.Context) []string { return nil }
