// Package redisenv starts the Redis topology one lab run needs, on one backend: the lock server (a
// primary with a replica that a failover promotes), the inventory store (a separate node that never
// fails over) and, for later quorum steps, independent nodes. Every key a run writes lives under the
// run's own prefix.
package redisenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Env is one run's Redis topology: the lock nodes, the inventory store, the run's key prefix.
type Env interface {
	// Backend names the backend ("embedded", "server", "sentinel", "container" or "url").
	Backend() string
	// Prefix is the run's key prefix; a run reads and writes no key outside it.
	Prefix() string
	// Nodes are the lock nodes. Nodes()[0] is the lock server every single-node step uses.
	Nodes() []Node
	// InventoryOptions configures a new client of the inventory store, which never fails over.
	InventoryOptions() *redis.Options
	// Strangers says, of the nodes and the inventory, which were sent commands on connections
	// nobody claimed (Claim): neither a process's hook nor the lab itself. Hazard: where a
	// backend cannot tell (a container's clients reach it through NAT; an existing server has
	// clients of its own), it says nothing, and a stranger shows only by what it changes.
	Strangers(ctx context.Context) []string
	// Close stops everything the Env started and removes the run's keys.
	Close() error
}

// Node is one lock node: a primary, with a replica that a failover promotes where the backend
// has one.
type Node interface {
	// Name names the node in reports and on screen ("lock").
	Name() string
	// Options configures a new client of the node. Its dialer always reaches the current
	// primary, so a client follows a failover once its old connections break. Hazard: it is
	// the lab's own way to the primary (on the sentinel backend, the primary the lab last saw
	// promoted); a buyer's client comes from NewClient.
	Options() *redis.Options
	// NewClient is a new client of the node's current primary that follows failovers, as a
	// user's client of this topology would: on the sentinel backend a go-redis failover client
	// that asks the node's Sentinels where the primary is; on the others a client of Options.
	// Its MaxRetries is go-redis's default (3) unless a URL says otherwise. The caller adds
	// Hook, if any, and closes it. Hazard: a client made from Options instead follows the lab's
	// view of the node, not Sentinel's.
	NewClient() *redis.Client
	// Hook, when not nil, must be added to every client of the node, after the caller's own
	// hooks (the embedded backend feeds its replica through it).
	Hook() redis.Hook
	// Admin is an uncounted client of the node's current primary.
	Admin() *redis.Client
	// Watch returns the referee's eye on every key of this node under prefix, but those under
	// prefix+except ("" for none). Hazard: it sees only what passes through its Observe; a
	// command sent around it shows up as Change.Unseen.
	Watch(prefix, except string) (Watcher, error)
	// CanFailover reports whether the node has a replica to promote.
	CanFailover() bool
	// HoldReplication stops the replica from receiving writes, as a partition would, until Failover.
	HoldReplication()
	// Failover kills the primary and promotes the replica. Clients follow on their next dial.
	Failover(ctx context.Context) error
	// CanRestart reports whether the lab may restart the node (it owns the server).
	CanRestart() bool
	// Outage is the longest a Failover or Restart of the node was measured to take on a loaded
	// machine: a scenario that stages one gives its holder's lease room for it.
	Outage() time.Duration
	// Restart restarts the node's primary without persistence: every connection to it breaks,
	// and it comes back at the same address having forgotten every key (its replica, if any,
	// follows it empty). Hazard: this is what a lock loses to a restart that has no fsync.
	Restart(ctx context.Context) error
	// Lacks says which of cmds (command names: "DELEX") the node's server does not run, and
	// names that server ("Redis 7.0.15", "miniredis v2.40.0") for a reason to give. It changes
	// nothing on the node. Hazard: it asks about a command's name, not its options (a server that
	// runs SET may refuse SET … IFEQ); the embedded backend reads miniredis's own command table,
	// since miniredis answers COMMAND with a fixed list.
	Lacks(ctx context.Context, cmds []string) (lacks []string, server string, err error)
}

// Options says what topology a run needs.
type Options struct {
	// Nodes is the number of lock nodes, independent primaries each with its replica where the
	// backend has one: 3 for a quorum lock. 0 means 1.
	Nodes int
}

// ErrSingleNode is what Open wraps when a run needs more lock nodes than the backend can give.
var ErrSingleNode = errors.New("redisenv: the backend has a single lock node")

// Open starts the backend named by name with the topology o asks for: "" or "embedded"
// (in-process miniredis), "server" (redis-server processes from PATH), "sentinel" (the same,
// each lock node watched by three Redis Sentinels, which fail it over), "container" (redis-server
// containers from $LAB_REDIS_IMAGE on a Docker daemon), or a "redis://host:port[/db]" /
// "rediss://…" URL of an existing server (one node: asking it for more is ErrSingleNode).
func Open(name string, o Options) (Env, error) {
	if err := CheckName(name, o); err != nil {
		return nil, err
	}
	n := max(o.Nodes, 1)
	switch {
	case name == "" || name == "embedded":
		return NewEmbeddedNodes(n)
	case name == "server":
		return NewServerNodes(n)
	case name == "sentinel":
		return NewSentinelNodes(n)
	case name == "container":
		return openContainer(n)
	}
	return NewURL(name)
}

// CheckName reports, without starting anything, whether Open could start the backend named by
// name with the topology o asks for: ErrBadName for a name that is wrong in itself, ErrSingleNode
// for a URL (one server) asked for more lock nodes than one.
func CheckName(name string, o Options) error {
	switch {
	case name == "" || name == "embedded" || name == "server" || name == "sentinel" || name == "container":
		return nil
	case strings.HasPrefix(name, "redis://") || strings.HasPrefix(name, "rediss://"):
		if _, _, err := parseURL(name); err != nil {
			return err
		}
		if n := max(o.Nodes, 1); n > 1 {
			return fmt.Errorf("%w: an existing server is one node, and this run needs %d", ErrSingleNode, n)
		}
		return nil
	}
	return nameError(fmt.Sprintf("unknown backend %q (want embedded, server, sentinel, container or redis://host:port[/db])", name))
}

// ErrBadName is what Open wraps when the backend's name itself is wrong (an unknown backend, a
// malformed URL): the caller's input, not the machine, is at fault.
var ErrBadName = errors.New("redisenv: bad backend name")

// nameError says what is wrong with a backend's name; it is ErrBadName.
type nameError string

func (e nameError) Error() string        { return "redisenv: " + string(e) }
func (e nameError) Is(target error) bool { return target == ErrBadName }

// FromEnv starts the backend named by $LAB_REDIS.
func FromEnv(o Options) (Env, error) {
	return Open(os.Getenv("LAB_REDIS"), o)
}

// newPrefix returns a fresh per-run key prefix, "lockstep:<8 hex>:".
func newPrefix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "lockstep:" + hex.EncodeToString(b) + ":"
}

// Handshake reports whether cmds are all part of go-redis's connection setup. go-redis sends
// these through a client's hooks from inside the command that needed the connection, so a hook
// that serialises commands must let them pass, or it waits for itself.
func Handshake(cmds ...redis.Cmder) bool {
	for _, cmd := range cmds {
		switch cmd.Name() {
		case "hello", "auth", "select", "client", "readonly":
		default:
			return false
		}
	}
	return len(cmds) > 0
}

// followPrimary configures a client whose every dial reaches primary() as it is at dial time, so
// the client follows a failover once its old connections break. Hazard: Addr is informational
// only, but go-redis may resolve it; it must be an address, not a name that needs DNS.
func followPrimary(primary func() string) *redis.Options {
	return &redis.Options{
		Addr: primary(),
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, primary())
		},
	}
}

// claiming returns o with a dialer that claims every connection it opens: a client of the lab's
// own (an admin, a watcher), never one handed to a process (see Claim).
func claiming(o *redis.Options) *redis.Options {
	dial := o.Dialer
	addr := o.Addr
	o.Dialer = func(ctx context.Context, network, a string) (net.Conn, error) {
		var c net.Conn
		var err error
		if dial != nil {
			c, err = dial(ctx, network, a)
		} else {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
		}
		if err == nil {
			Claim(c)
		}
		return c, err
	}
	return o
}
