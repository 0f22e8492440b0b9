package redisenv_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/redis/go-redis/v9"
)

// The checks below are the promises of a lock node of the server and container backends (one
// replicated-node type on both); each backend's tests run them on its own servers.

// nodeClient is a client of node as the arena makes one: NewClient, and its Hook if any.
func nodeClient(t *testing.T, node redisenv.Node) *redis.Client {
	t.Helper()
	c := node.NewClient()
	if h := node.Hook(); h != nil {
		c.AddHook(h)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// exists reports whether key exists on c, failing the test on an error.
func exists(t *testing.T, ctx context.Context, c *redis.Client, key string) bool {
	t.Helper()
	n, err := c.Exists(ctx, key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// checkFailoverLosesHeldWrite: a write made before HoldReplication survives the failover, a write
// made after it is lost, and a client made before the failover follows the promoted replica.
func checkFailoverLosesHeldWrite(t *testing.T, env redisenv.Env, node redisenv.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := nodeClient(t, node)
	first, second := env.Prefix()+"first", env.Prefix()+"second"
	if err := c.Set(ctx, first, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	node.HoldReplication()
	if err := c.Set(ctx, second, "2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if !exists(t, ctx, node.Admin(), second) {
		t.Fatal("before the failover the primary must have the second key")
	}
	start := time.Now()
	if err := node.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s failed over in %v", node.Name(), time.Since(start))
	if !exists(t, ctx, c, first) {
		t.Error("the promoted replica lost the write made before the hold")
	}
	if exists(t, ctx, c, second) {
		t.Error("the promoted replica has the write made after the hold")
	}
	if err := c.Set(ctx, env.Prefix()+"third", "3", 0).Err(); err != nil {
		t.Errorf("a lock client did not follow the promoted replica: %v", err)
	}
	if err := node.Failover(ctx); err == nil {
		t.Error("a second failover should fail: there is no replica left")
	}
}

// checkQuorum: n lock nodes named nodeName(i, n), on addresses of their own, independent of each
// other: a key written on one is on no other, and one node's failover loses its held write while
// the others keep theirs.
func checkQuorum(t *testing.T, env redisenv.Env, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := env.Nodes()
	if len(nodes) != n {
		t.Fatalf("want %d lock nodes, got %d", n, len(nodes))
	}
	addrs := []string{env.InventoryOptions().Addr}
	for i, node := range nodes {
		if want := fmt.Sprintf("lock-%d", i+1); node.Name() != want {
			t.Errorf("node %d is named %q, want %q", i, node.Name(), want)
		}
		addrs = append(addrs, node.Options().Addr, redisenv.ReplicaAddr(node))
	}
	if slices.Sort(addrs); len(slices.Compact(addrs)) != 2*n+1 {
		t.Fatalf("the primaries, replicas and inventory should have %d addresses of their own: %v", 2*n+1, addrs)
	}
	clients := make([]*redis.Client, n)
	for i, node := range nodes {
		clients[i] = nodeClient(t, node)
		if err := clients[i].Set(ctx, fmt.Sprintf("%sonly-on-%d", env.Prefix(), i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, node := range nodes {
		for j := range n {
			if got := exists(t, ctx, node.Admin(), fmt.Sprintf("%sonly-on-%d", env.Prefix(), j)); got != (i == j) {
				t.Errorf("%s has node %d's key: %v", node.Name(), j, got)
			}
		}
	}
	// Node 2 fails over with a held write; the others see nothing of it.
	held := env.Prefix() + "held"
	nodes[1].HoldReplication()
	for _, c := range clients {
		if err := c.Set(ctx, held, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := nodes[1].Failover(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		if got := exists(t, ctx, c, held); got != (i != 1) {
			t.Errorf("after %s's failover, %s has the held write: %v", nodes[1].Name(), nodes[i].Name(), got)
		}
		if !exists(t, ctx, c, fmt.Sprintf("%sonly-on-%d", env.Prefix(), i)) {
			t.Errorf("%s lost the key written before the hold", nodes[i].Name())
		}
	}
	for i, node := range nodes {
		if node.CanFailover() && (i == 1) != (redisenv.ReplicaAddr(node) == "") {
			t.Errorf("%s: replica %q after %s's failover", node.Name(), redisenv.ReplicaAddr(node), nodes[1].Name())
		}
	}
}

// checkRestartForgets restarts node rounds times. Each time a key written before the restart,
// on the primary and the replica and saved to disk by both (SAVE), must be gone after it, from
// both; a client made before the restarts must reconnect on its own. Then the replica must still
// follow the primary (a held write is lost, an earlier one kept), and the promoted replica must
// restart empty too. It returns how many restarts forgot the key.
func checkRestartForgets(t *testing.T, env redisenv.Env, node redisenv.Node, rounds int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+5)*10*time.Second)
	defer cancel()
	c := nodeClient(t, node)
	replica := redis.NewClient(&redis.Options{Addr: redisenv.ReplicaAddr(node)})
	defer replica.Close()
	var took []time.Duration
	forgot := 0
	for i := range rounds {
		key := fmt.Sprintf("%srestart:%d", env.Prefix(), i)
		if err := c.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("round %d: the client did not reconnect after the restart: %v", i, err)
		}
		for !exists(t, ctx, replica, key) {
			time.Sleep(time.Millisecond)
		}
		// An RDB file on disk must not bring the key back.
		if err := node.Admin().Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := replica.Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := node.Restart(ctx); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		took = append(took, time.Since(start))
		n, err := c.Exists(ctx, key).Result()
		if err != nil {
			t.Fatalf("round %d: the client did not reconnect after the restart: %v", i, err)
		}
		if n == 0 && !exists(t, ctx, replica, key) {
			forgot++
		} else {
			t.Errorf("round %d: the key survived the restart (primary %v)", i, n == 1)
		}
	}
	slices.Sort(took)
	t.Logf("%s: %d/%d restarts forgot the key; a restart took %v (min) %v (median) %v (max)",
		node.Name(), forgot, rounds, took[0], took[len(took)/2], took[len(took)-1])

	// The replica follows the restarted primary.
	kept, lost := env.Prefix()+"after-restart:kept", env.Prefix()+"after-restart:lost"
	if err := c.Set(ctx, kept, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	node.HoldReplication()
	if err := c.Set(ctx, lost, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists(t, ctx, c, kept) || exists(t, ctx, c, lost) {
		t.Errorf("after a restart, the replica did not follow its primary: kept %v, held write %v", exists(t, ctx, c, kept), exists(t, ctx, c, lost))
	}
	// The promoted replica, now primary with no replica, restarts empty too.
	if err := node.Admin().Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(t, ctx, c, kept) {
		t.Error("the promoted replica kept its keys through a restart")
	}
	return forgot
}

// checkWatcherOnQuorum: the referee's watcher of a quorum node other than the first sees a
// client's SET and DEL of a key under the prefix as changes of that key, with the lease a SET
// gives; a key under the excepted part of the prefix is not watched; after a restart, Resynced,
// the watcher has nothing; a key that ran out is Lapsed, not a change; a watcher of another node
// sees none of it.
func checkWatcherOnQuorum(t *testing.T, env redisenv.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := env.Nodes()
	if len(nodes) < 2 {
		t.Fatalf("want a quorum, got %d node(s)", len(nodes))
	}
	node, other := nodes[1], nodes[0]
	pre := env.Prefix()
	key := pre + "lock"
	w, err := node.Watch(pre, "inventory:")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wo, err := other.Watch(pre, "inventory:")
	if err != nil {
		t.Fatal(err)
	}
	defer wo.Close()
	c := nodeClient(t, node)
	observe := func(what string, send func() error) redisenv.Change {
		t.Helper()
		var serr error
		ch, err := w.Observe(ctx, func() { serr = send() })
		if err != nil || serr != nil {
			t.Fatalf("%s: watcher %v, command %v", what, err, serr)
		}
		if len(ch.Unseen) > 0 {
			t.Errorf("%s: the watcher reports an unseen change: %+v", what, ch.Unseen)
		}
		return ch
	}
	one := func(what string, ch redisenv.Change) redisenv.KeyChange {
		t.Helper()
		if len(ch.Keys) != 1 || ch.Keys[0].Key != "lock" {
			t.Fatalf("%s: want one change, of lock; got %+v", what, ch.Keys)
		}
		return ch.Keys[0]
	}
	if k := one("SET", observe("SET", func() error { return c.Set(ctx, key, "a", time.Minute).Err() })); k.Before.Exists || !k.After.Exists || k.TTL <= 0 || k.TTL > time.Minute {
		t.Errorf("SET: before %v, after %v, TTL %v", k.Before.Exists, k.After.Exists, k.TTL)
	}
	if ch := observe("SET of the inventory's", func() error { return c.Set(ctx, pre+"inventory:stock", "3", 0).Err() }); len(ch.Keys) != 0 {
		t.Errorf("a key under the excepted prefix is watched: %+v", ch.Keys)
	}
	ch := observe("DEL", func() error { return c.Del(ctx, key).Err() })
	if k := one("DEL", ch); !k.Before.Exists || k.After.Exists || len(ch.Lapsed) > 0 {
		t.Errorf("DEL is a change: before %v, after %v, lapsed %+v", k.Before.Exists, k.After.Exists, ch.Lapsed)
	}
	observe("SET again", func() error { return c.Set(ctx, key, "b", 0).Err() })
	if err := node.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	kv, err := w.Resync(ctx)
	if err != nil {
		t.Fatalf("Resync after the restart: %v", err)
	}
	if len(kv) != 0 {
		t.Errorf("after the restart the watcher still sees keys: %+v", kv)
	}
	one("SET after the restart", observe("SET after the restart", func() error { return c.Set(ctx, key, "c", 100*time.Millisecond).Err() }))
	time.Sleep(300 * time.Millisecond)
	ch = observe("EXISTS past the TTL", func() error { return c.Exists(ctx, key).Err() })
	if len(ch.Keys) != 0 || len(ch.Lapsed) != 1 || ch.Lapsed[0].Key != "lock" || ch.Lapsed[0].After.Exists {
		t.Errorf("a key that ran out is Lapsed, not a change: keys %+v, lapsed %+v", ch.Keys, ch.Lapsed)
	}
	// What a command publishes on the run's channels is the command's (a lock's wake-up); what
	// was published between observations, or on a channel of another prefix, is not.
	if err := c.Publish(ctx, pre+"lock:released", "unobserved").Err(); err != nil {
		t.Fatal(err)
	}
	c.Publish(ctx, "elsewhere:lock:released", "not the run's")
	ch = observe("a script that sets and publishes", func() error {
		return c.Eval(ctx, `redis.call("SET", KEYS[1], "d"); redis.call("PUBLISH", KEYS[2], "released"); return redis.call("PUBLISH", "elsewhere", "x")`,
			[]string{key, pre + "lock:released"}).Err()
	})
	want := []redisenv.Message{{Channel: "lock:released", Text: "released"}}
	if _, emb := env.(*redisenv.Embedded); emb { // its node is the run's own: every channel is the run's
		want = append(want, redisenv.Message{Channel: "elsewhere", Text: "x"})
	}
	if !slices.Equal(ch.Published, want) {
		t.Errorf("the script's PUBLISH: want %+v, got %+v", want, ch.Published)
	}
	if ch = observe("GET", func() error { return c.Get(ctx, key).Err() }); len(ch.Published) != 0 {
		t.Errorf("a GET published %+v", ch.Published)
	}
	// The other node's watcher saw none of it.
	oc := nodeClient(t, other)
	och, err := wo.Observe(ctx, func() { oc.Exists(ctx, key) })
	if err != nil {
		t.Fatal(err)
	}
	if len(och.Unseen) > 0 || len(och.Keys) > 0 || len(och.Lapsed) > 0 {
		t.Errorf("%s's watcher saw %s's key: %+v", other.Name(), node.Name(), och)
	}
}

// checkRestartKeepsHold: a held replication link stays held through a restart, as a partition
// would, and the replica is emptied all the same: after a failover, the promoted replica has
// neither the keys from before the restart nor a write made after it.
func checkRestartKeepsHold(t *testing.T, env redisenv.Env, node redisenv.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := nodeClient(t, node)
	before, held, after := env.Prefix()+"before", env.Prefix()+"held", env.Prefix()+"after"
	if err := c.Set(ctx, before, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	node.HoldReplication()
	if err := c.Set(ctx, held, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, after, 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.Failover(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{before, held, after} {
		if exists(t, ctx, c, k) {
			t.Errorf("the promoted replica has %s", k)
		}
	}
}
