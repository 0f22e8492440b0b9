package redisenv_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/redis/go-redis/v9"
)

// checkObserveAll: on node's watcher, a FLUSHDB sent through ObserveAll reports every key of the
// run as gone in Change.Keys, with what each was before; so does a SWAPDB that brings another
// database's keys in, as new keys. It returns what plain Observe reported for a FLUSHDB.
func checkObserveAll(t *testing.T, env redisenv.Env, node redisenv.Node, c *redis.Client) redisenv.Change {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pre := env.Prefix()
	w, err := node.Watch(pre, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	aw := w
	write := func() {
		t.Helper()
		for _, k := range []string{"lock", "owner"} {
			if _, err := w.Observe(ctx, func() { c.Set(ctx, pre+k, k, time.Minute) }); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Observe(ctx, func() { c.HSet(ctx, pre+"hash", "f", "v") }); err != nil {
			t.Fatal(err)
		}
	}
	write()
	ch, err := aw.ObserveAll(ctx, func() {
		if err := c.FlushDB(ctx).Err(); err != nil {
			t.Errorf("FLUSHDB: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, k := range ch.Keys {
		if k.Gone() && k.Before.Exists {
			gone = append(gone, k.Key)
		}
	}
	if want := []string{"hash", "lock", "owner"}; !slices.Equal(gone, want) || len(ch.Keys) != 3 || len(ch.Unseen) > 0 {
		t.Errorf("FLUSHDB through ObserveAll: want %v gone, got %+v", want, ch)
	}
	write()
	plain, err := w.Observe(ctx, func() { c.FlushDB(ctx) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	return plain
}

// TestServerObserveAllSeesFlushDB: redis-server 7.0 publishes no keyspace event for FLUSHDB, so
// the notifying watcher's Observe sees nothing of it; ObserveAll reads every key after it and
// reports the run's keys gone. A SWAPDB through ObserveAll reports the keys it brought in.
func TestServerObserveAllSeesFlushDB(t *testing.T) {
	s := openServer(t)
	node := s.Nodes()[0]
	c := nodeClient(t, node)
	plain := checkObserveAll(t, s, node, c)
	if len(plain.Keys) != 0 {
		t.Errorf("Observe saw a FLUSHDB on redis-server, which publishes nothing for it: was the hazard fixed? %+v", plain)
	}
	ctx := context.Background()
	pre := s.Prefix()
	w, err := node.Watch(pre, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other := redis.NewClient(&redis.Options{Addr: node.Options().Addr, DB: 1})
	defer other.Close()
	if err := other.Set(ctx, pre+"elsewhere", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ch, err := w.ObserveAll(ctx, func() { c.Do(ctx, "SWAPDB", 0, 1) })
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Keys) != 1 || ch.Keys[0].Key != "elsewhere" || ch.Keys[0].Before.Exists || !ch.Keys[0].After.Exists {
		t.Errorf("SWAPDB through ObserveAll: want elsewhere new, got %+v", ch)
	}
}

// TestEmbeddedObserveAllSeesFlushDB: the embedded watcher reads every key anyway; ObserveAll is
// its Observe.
func TestEmbeddedObserveAllSeesFlushDB(t *testing.T) {
	e, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	node := e.Nodes()[0]
	if plain := checkObserveAll(t, e, node, nodeClient(t, node)); len(plain.Keys) != 3 {
		t.Errorf("the embedded Observe should see FLUSHDB: %+v", plain)
	}
}

// TestURLObserveAllSeesFlushDB: on a URL server with its default configuration the poll watcher
// reads every key anyway. (The guard refuses a buyer's FLUSHDB there; this client has no guard.)
func TestURLObserveAllSeesFlushDB(t *testing.T) {
	srv := openServer(t)
	env, err := redisenv.Open("redis://"+srv.InventoryOptions().Addr+"/5", redisenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	ctx := context.Background()
	if err := env.Nodes()[0].Admin().ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		t.Fatal(err)
	}
	node := env.Nodes()[0]
	c := redis.NewClient(node.Options())
	defer c.Close()
	if plain := checkObserveAll(t, env, node, c); len(plain.Keys) != 3 {
		t.Errorf("the poll watcher's Observe should see FLUSHDB: %+v", plain)
	}
}

func TestChangesUnnamed(t *testing.T) {
	for _, name := range []string{"flushdb", "FLUSHALL", "SwapDB", "debug", "replicaof", "slaveof", "migrate"} {
		if !redisenv.ChangesUnnamed(name) {
			t.Errorf("ChangesUnnamed(%q) = false", name)
		}
	}
	for _, name := range []string{"del", "set", "eval", "evalsha", "move", "copy", "unlink", "expire"} {
		if redisenv.ChangesUnnamed(name) {
			t.Errorf("ChangesUnnamed(%q) = true: its keyspace events name what it changes", name)
		}
	}
}
