package redisenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/redis/go-redis/v9"
)

// fiveBystanders writes someone else's keys into c's database: a string, a hash, a list, a set,
// and a key with a TTL.
func fiveBystanders(t *testing.T, ctx context.Context, c *redis.Client) {
	t.Helper()
	p := c.Pipeline()
	p.Set(ctx, "user:1", "alice", 0)
	p.HSet(ctx, "cart:9", "sku", "1001", "qty", "2")
	p.RPush(ctx, "queue:mail", "a", "b", "c")
	p.SAdd(ctx, "tags", "x", "y")
	p.Set(ctx, "session:abc", "token", time.Hour)
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// sameBystanders fails the test unless every key of before is in c's database byte for byte,
// with the same expiry time (none where it had none).
func sameBystanders(t *testing.T, ctx context.Context, c *redis.Client, before map[string]snapshot, after string) {
	t.Helper()
	now := snapshotAll(t, ctx, c)
	for k, b := range before {
		a, ok := now[k]
		switch {
		case !ok:
			t.Errorf("after %s: bystander key %q is gone", after, k)
		case a.dump != b.dump:
			t.Errorf("after %s: bystander key %q changed", after, k)
		case a.expireAt != b.expireAt:
			t.Errorf("after %s: bystander key %q: PEXPIRETIME %d, was %d", after, k, a.expireAt, b.expireAt)
		}
	}
}

// TestURLGuardRefuses sends, through a buyer's client of the url backend (NewClient and the
// node's Hook), every kind of command the guard must refuse, alone, in a pipeline and in a
// transaction: each is refused with a *Refusal of one line naming it, nothing of it reaches the
// server (its command statistics count none of them), and five bystander keys stay byte for byte
// what they were. Then the commands a lock sends under the run's prefix go through, an EVALSHA
// of a body the guard has not seen is answered NOSCRIPT, and go-redis's Script.Run falls back to
// EVAL.
func TestURLGuardRefuses(t *testing.T) {
	srv := openServer(t)
	addr := srv.InventoryOptions().Addr
	ctx := context.Background()
	direct := redis.NewClient(&redis.Options{Addr: addr})
	defer direct.Close()
	fiveBystanders(t, ctx, direct)
	if err := direct.Do(ctx, "FUNCTION", "LOAD", "#!lua name=userlib\nredis.register_function('userfn', function(keys, args) return redis.call('GET', keys[1]) end)").Err(); err != nil {
		t.Fatal(err)
	}
	env, err := redisenv.Open("redis://"+addr+"/0", redisenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	pre := env.Prefix()
	node := env.Nodes()[0]
	c := node.NewClient()
	defer c.Close()
	c.AddHook(node.Hook())
	// A script body seen through SCRIPT LOAD (which only caches it) is checked when it runs.
	sha, err := c.ScriptLoad(ctx, "return redis.call('FLUSHALL')").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := snapshotAll(t, ctx, direct)

	refused := [][]any{
		{"FLUSHDB"}, {"flushdb", "ASYNC"}, {"FLUSHALL"}, {"SWAPDB", "0", "1"}, {"SELECT", "1"},
		{"MOVE", "user:1", "1"}, {"MOVE", pre + "k", "1"}, {"COPY", pre + "a", pre + "b", "DB", "1"},
		{"CONFIG", "SET", "notify-keyspace-events", "KEA"}, {"CONFIG", "GET", "*"}, {"SHUTDOWN", "NOSAVE"},
		{"DEBUG", "SLEEP", "0"}, {"SAVE"}, {"BGSAVE"}, {"BGREWRITEAOF"}, {"REPLICAOF", "127.0.0.1", "1"},
		{"SLAVEOF", "NO", "ONE"}, {"FAILOVER"}, {"SCRIPT", "FLUSH"}, {"SCRIPT", "KILL"},
		{"FUNCTION", "FLUSH"}, {"FUNCTION", "DELETE", "userlib"}, {"FUNCTION", "RESTORE", "x"},
		{"FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('x', function() return 1 end)"},
		{"CLIENT", "KILL", "TYPE", "normal"}, {"client", "pause", "10"}, {"KEYS", "*"}, {"KEYS", "user:*"},
		{"KEYS", "lockstep:*"}, {"SCAN", "0"}, {"SCAN", "0", "MATCH", "*"}, {"SCAN", "0", "COUNT", "10", "MATCH", "lock*"},
		{"RANDOMKEY"}, {"MIGRATE", "127.0.0.1", "1", "user:1", "0", "100"}, {"MONITOR"},
		{"GET", "user:1"}, {"DEL", "user:1"}, {"DEL", pre + "a", "tags"}, {"SET", "user:1", "x"},
		{"HSET", "cart:9", "qty", "3"}, {"EXPIRE", "session:abc", "1"}, {"RENAME", pre + "a", "user:1"},
		{"MSET", pre + "a", "1", "queue:mail", "2"}, {"RPOPLPUSH", "queue:mail", pre + "q"},
		{"SMOVE", "tags", pre + "s", "x"}, {"DUMP", "cart:9"}, {"OBJECT", "ENCODING", "user:1"},
		{"XREAD", "COUNT", "1", "STREAMS", pre + "s", "user:1", "0", "0"},
		{"ZUNIONSTORE", pre + "z", "2", pre + "a", "tags"}, {"BLPOP", pre + "l", "queue:mail", "1"},
		{"GEORADIUS", pre + "g", "0", "0", "1", "km", "STORE", "user:1"},
		{"SORT", pre + "l", "BY", "user:*"}, {"SORT", pre + "l", "GET", "cart:*->qty"}, {"SORT", pre + "l", "STORE", "user:1"},
		{"EVAL", "return 1", "1", "user:1"}, {"EVAL", "return 1", "2", pre + "a", "session:abc"},
		{"EVAL", "redis.call('FLUSHDB') return 1", "0"}, {"EVAL", `return redis.pcall( "keys" , "*")`, "0"},
		{"EVAL", "return redis.call([[SWAPDB]], 0, 1)", "0"}, {"EVAL", "redis.call('select', 1) return redis.call('del', 'x')", "0"},
		{"EVALSHA", sha, "0"}, {"FCALL", "userfn", "1", "user:1"}, {"FCALL_RO", "userfn", "1", "cart:9"},
	}
	for _, argv := range refused {
		what := fmt.Sprint(argv)
		err := c.Do(ctx, argv...).Err()
		var r *redisenv.Refusal
		if !errors.As(err, &r) {
			t.Errorf("%s: want a *Refusal, got %v", what, err)
			continue
		}
		msg := r.Error()
		name := strings.ToUpper(fmt.Sprint(argv[0]))
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "refused "+name) || !strings.Contains(msg, pre) {
			t.Errorf("%s: want one line naming %s and the prefix, got %q", what, name, msg)
		}
		sameBystanders(t, ctx, direct, before, what)
	}
	t.Logf("for example: %v", c.FlushDB(ctx).Err())
	t.Logf("for example: %v", c.Del(ctx, "user:1").Err())

	// A batch with one refused command is refused whole: its other commands are not sent.
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, pre+"piped", "1", 0)
		p.FlushDB(ctx)
		return nil
	})
	var r *redisenv.Refusal
	if !errors.As(err, &r) || r.Batch != 2 || r.Command != "FLUSHDB" {
		t.Errorf("a pipeline with FLUSHDB: want it refused whole, got %v", err)
	}
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, pre+"tx", "1", 0)
		p.Del(ctx, "user:1")
		return nil
	})
	if !errors.As(err, &r) || r.Batch != 2 || !strings.Contains(r.Error(), `"user:1"`) {
		t.Errorf("a transaction that deletes user:1: want it refused whole, got %v", err)
	}
	for _, cmd := range cmds {
		if !errors.As(cmd.Err(), &r) {
			t.Errorf("%v in a refused transaction: %v", cmd.Args(), cmd.Err())
		}
	}
	for _, k := range []string{pre + "piped", pre + "tx"} {
		if exists(t, ctx, direct, k) {
			t.Errorf("%s was written by a refused batch", k)
		}
	}
	sameBystanders(t, ctx, direct, before, "the refused batches")

	stats := direct.Info(ctx, "commandstats").Val()
	for _, name := range []string{"flushdb", "flushall", "swapdb", "move", "config", "shutdown", "debug", "save", "bgsave",
		"bgrewriteaof", "replicaof", "slaveof", "failover", "script|flush", "function|flush", "function|delete",
		"client|kill", "client|pause", "keys", "randomkey", "migrate", "monitor", "del", "hset", "eval", "evalsha", "fcall",
		"sort", "rename", "multi", "exec"} {
		if strings.Contains(stats, "cmdstat_"+name+":") {
			t.Errorf("the server ran %s, which the guard refused", name)
		}
	}
	if got := len(env.(*redisenv.URL).Refusals()); got != len(refused)+4 {
		t.Errorf("the guard counts %d refusals, want %d", got, len(refused)+4)
	}

	// What a lock sends under the run's prefix goes through.
	allowed := [][]any{
		{"SET", pre + "lock", "me", "NX", "PX", "1000"}, {"GET", pre + "lock"}, {"PTTL", pre + "lock"},
		{"HSET", pre + "h", "owner", "1"}, {"HINCRBY", pre + "h", "owner", "1"}, {"DEL", pre + "lock", pre + "h"},
		{"EVAL", "return redis.call('SET', KEYS[1], ARGV[1])", "1", pre + "lock", "x"},
		{"KEYS", pre + "*"}, {"SCAN", "0", "MATCH", pre + "*", "COUNT", "100"}, {"SELECT", "0"},
		{"RPUSH", pre + "l", "3", "1"}, {"SORT", pre + "l"}, {"SORT", pre + "l", "BY", "nosort", "GET", "#", "STORE", pre + "sorted"},
		{"PUBLISH", "anyone:channel", "hello"}, {"SCRIPT", "LOAD", "return 1"}, {"TIME"}, {"PING"},
		{"COPY", pre + "l", pre + "l2"}, {"WAIT", "0", "0"},
	}
	for _, argv := range allowed {
		if err := c.Do(ctx, argv...).Err(); err != nil && err != redis.Nil {
			t.Errorf("%v: %v", argv, err)
		}
	}
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, pre+"tx", "1", 0)
		p.Expire(ctx, pre+"tx", time.Minute)
		return nil
	})
	if err != nil {
		t.Errorf("a transaction under the prefix: %v", err)
	}

	// An EVALSHA whose body the guard has not seen is NOSCRIPT, the server's own answer for a
	// script it lacks; Script.Run then sends the body, which the guard checks.
	script := redis.NewScript("return redis.call('INCR', KEYS[1])")
	if err := direct.ScriptLoad(ctx, "return redis.call('INCR', KEYS[1])").Err(); err != nil {
		t.Fatal(err) // in the server's cache, put there by another client
	}
	if err := c.EvalSha(ctx, script.Hash(), []string{pre + "n"}).Err(); !errors.Is(err, redis.ErrNoScript) {
		t.Errorf("EVALSHA of an unseen body: want NOSCRIPT, got %v", err)
	}
	for want := int64(1); want <= 2; want++ {
		if n, err := script.Run(ctx, c, []string{pre + "n"}).Int64(); err != nil || n != want {
			t.Errorf("Script.Run: %d, %v", n, err)
		}
	}
	if err := script.Run(ctx, c, []string{"user:1"}).Err(); !errors.As(err, &r) {
		t.Errorf("Script.Run on user:1: want a *Refusal, got %v", err)
	}
	sameBystanders(t, ctx, direct, before, "the allowed commands")
}

// TestURLGuardLetsEveryStepThrough plays every step of the catalog under every scenario through
// arena.Run on the url backend (the guard on every buyer's lock client), with someone else's keys
// on the server: the guard refuses none of their commands, and the bystanders stay as they were.
// It takes a minute of the wall clock, so it runs under LAB_SLOW=1 (CI); without it,
// TestURLLeavesOtherKeysAlone plays steps 04 and 09 so, and CI's URL stages play every step's
// suite on such a server, where a refused command leaves its cell without a verdict and fails it.
func TestURLGuardLetsEveryStepThrough(t *testing.T) {
	steptest.Slow(t, "it plays every step under every scenario on a redis-server, on the wall clock (a minute)")
	if b := os.Getenv("LAB_REDIS"); b != "" {
		t.Skipf("it plays on a server of its own whatever LAB_REDIS says (%s): the default run plays it", b)
	}
	srv := openServer(t)
	addr := srv.InventoryOptions().Addr
	ctx := context.Background()
	direct := redis.NewClient(&redis.Options{Addr: addr})
	defer direct.Close()
	fiveBystanders(t, ctx, direct)
	before := snapshotAll(t, ctx, direct)
	start := time.Now()
	var mu sync.Mutex
	played := 0
	t.Run("steps", func(t *testing.T) {
		for _, st := range catalog.Steps {
			if st.Nodes > 1 {
				continue // a quorum needs more nodes than a URL server is
			}
			t.Run(st.Slug, func(t *testing.T) {
				t.Parallel()
				for _, sc := range scenario.Names() {
					if sc == steps.Failover || sc == steps.Restart {
						continue
					}
					env, err := redisenv.Open("redis://"+addr+"/0", redisenv.Options{})
					if err != nil {
						t.Fatal(err)
					}
					_, err = scenario.Run(ctx, arena.Config{Step: st, Env: env}, sc)
					if err != nil && !errors.Is(err, arena.ErrCannotStage) {
						t.Errorf("%s under %s: %v", st.Slug, sc, err)
					}
					for _, r := range env.(*redisenv.URL).Refusals() {
						t.Errorf("%s under %s: the guard refused a step's command: %v", st.Slug, sc, &r)
					}
					env.Close()
					mu.Lock()
					played++
					mu.Unlock()
				}
			})
		}
	})
	t.Logf("%d plays in %v", played, time.Since(start))
	sameBystanders(t, ctx, direct, before, "every step")
}
