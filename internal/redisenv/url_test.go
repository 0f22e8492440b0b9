package redisenv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/redis/go-redis/v9"
)

// snapshot is what a key looked like: its DUMP and its expiry time.
type snapshot struct {
	dump     string
	expireAt int64 // PEXPIRETIME: the key's expiry in Unix milliseconds, -1 for none
}

// bystanders writes keys that belong to someone else into c's database.
func bystanders(t *testing.T, ctx context.Context, c *redis.Client) {
	t.Helper()
	p := c.Pipeline()
	p.Set(ctx, "user:1", "alice", 0)
	p.Set(ctx, "lockstep", "a key named like the lab, outside its prefix", 0)
	p.Set(ctx, "lockstepper:1", "a neighbour of the prefix", 0)
	p.Set(ctx, "lockstep-run:1", "another neighbour", 0)
	p.Set(ctx, "session:abc", "token", time.Minute)
	p.HSet(ctx, "cart:9", "sku", "1001", "qty", "2")
	p.PExpire(ctx, "cart:9", 90*time.Second)
	p.RPush(ctx, "queue:mail", "a", "b", "c")
	p.SAdd(ctx, "tags", "x", "y")
	p.ZAdd(ctx, "scores", redis.Z{Score: 1, Member: "bob"})
	p.Set(ctx, "stock:product:1001", "42", 0) // the arena's key name, without the prefix
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// snapshotAll DUMPs every key of c's database.
func snapshotAll(t *testing.T, ctx context.Context, c *redis.Client) map[string]snapshot {
	t.Helper()
	out := map[string]snapshot{}
	iter := c.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		at, err := c.Do(ctx, "PEXPIRETIME", k).Int64() // Redis ≥ 7.0
		if err != nil {
			t.Fatalf("PEXPIRETIME %s: %v", k, err)
		}
		out[k] = snapshot{dump: d, expireAt: at}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// raceDetector is set when the test runs under -race (race_test.go).
var raceDetector bool

// TestURLLeavesOtherKeysAlone runs the arena on the url backend against a server that holds
// someone else's keys, in the same database and in another one, and checks that every verdict is
// the matrix's (under the race detector, load's flood aside: a count that follows the machine),
// that after Close those keys are byte-identical, their expiry times unmoved, and no
// "lockstep:" key is left. It plays the server as a user runs it, with the default configuration
// (no keyspace events: the poll watcher), and with keyspace events on (the notifying watcher).
func TestURLLeavesOtherKeysAlone(t *testing.T) {
	for _, events := range []string{"", "KEA"} {
		name := "default config"
		if events != "" {
			name = "notify-keyspace-events " + events
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel() // a server each; both mostly wait on the wall clock
			checkURLLeavesOtherKeysAlone(t, events)
		})
	}
}

func checkURLLeavesOtherKeysAlone(t *testing.T, events string) {
	srv := openServer(t)
	addr := srv.InventoryOptions().Addr
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", events).Err(); err != nil {
		t.Fatal(err)
	}
	db0 := redis.NewClient(&redis.Options{Addr: addr})
	db3 := redis.NewClient(&redis.Options{Addr: addr, DB: 3})
	defer db0.Close()
	defer db3.Close()
	bystanders(t, ctx, db0)
	bystanders(t, ctx, db3)
	before0, before3 := snapshotAll(t, ctx, db0), snapshotAll(t, ctx, db3)
	for _, slug := range []string{"04_atomic_ttl", "09_lua_unlock"} {
		st, err := catalog.Find(slug)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range scenario.Names() {
			env, err := redisenv.Open("redis://"+addr, redisenv.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if env.Backend() != "url" || env.Nodes()[0].CanFailover() {
				t.Fatalf("backend %q, CanFailover %v", env.Backend(), env.Nodes()[0].CanFailover())
			}
			rep, _, err := scenario.Steady(ctx, arena.Config{Step: st, Env: env}, sc, scenario.StallTries)
			switch {
			case sc == steps.Failover || sc == steps.Restart:
				if !errors.Is(err, arena.ErrCannotStage) {
					t.Errorf("%s: the %s scenario must refuse a server the lab does not own, not %v", slug, sc, err)
				}
			case err != nil:
				t.Errorf("%s under %s: %v", slug, sc, err)
			default:
				want := st.Expect[sc]
				if want == nil {
					want = []steps.Kind{}
				}
				got := rep.Violations
				if raceDetector && sc == steps.Load {
					// Flood is a count of commands per order, and under the race detector on the
					// poll watcher a spinning lock's waiters send half as many (09: 100–150 per
					// order, limit 100; 280–380 without it): the verdict follows the machine there.
					drop := func(ks []steps.Kind) []steps.Kind {
						return slices.DeleteFunc(slices.Clone(ks), func(k steps.Kind) bool { return k == steps.Flood })
					}
					want, got = drop(want), drop(got)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s under %s on the url backend: found %v, the matrix expects %v", slug, sc, rep.Violations, want)
				}
				if !rep.Complete() {
					t.Errorf("%s under %s on the url backend: the referee could not judge %v: %v", slug, sc, rep.Unjudged, rep.Untracked)
				}
			}
			// Leave more keys than one SCAN page behind, the way a run that died might.
			if sc == steps.Contention {
				p := db0.Pipeline()
				for i := range 2500 {
					p.Set(ctx, fmt.Sprintf("%sleftover:%d", env.Prefix(), i), i, 0)
				}
				p.HSet(ctx, env.Prefix()+"leftover:hash", "f", "v")
				p.Set(ctx, env.Prefix()+"leftover:ttl", "v", time.Hour)
				if _, err := p.Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := env.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	}

	for name, pair := range map[string]struct {
		c      *redis.Client
		before map[string]snapshot
	}{"db 0": {db0, before0}, "db 3": {db3, before3}} {
		after := snapshotAll(t, ctx, pair.c)
		for k := range after {
			if strings.HasPrefix(k, "lockstep:") {
				t.Errorf("%s: key %q is left behind", name, k)
			}
		}
		for k, b := range pair.before {
			a, ok := after[k]
			switch {
			case !ok:
				t.Errorf("%s: bystander key %q was deleted", name, k)
			case a.dump != b.dump:
				t.Errorf("%s: bystander key %q changed", name, k)
			case a.expireAt != b.expireAt:
				t.Errorf("%s: bystander key %q: PEXPIRETIME %d, was %d", name, k, a.expireAt, b.expireAt)
			}
		}
		if len(after) != len(pair.before) {
			t.Errorf("%s: %d keys before, %d after", name, len(pair.before), len(after))
		}
	}
}

// TestURLUnreachable checks that a URL nobody answers fails Open at once, in one line, without
// the password.
func TestURLUnreachable(t *testing.T) {
	start := time.Now()
	_, err := redisenv.Open("redis://lab:s3cret@127.0.0.1:1/0", redisenv.Options{})
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || strings.Contains(msg, "s3cret") || !strings.Contains(msg, "cannot reach") {
		t.Errorf("want one line without the password, got %q", msg)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Open took %v to give up", d)
	}
	t.Log(msg)
	if _, err := redisenv.Open("redis://127.0.0.1:notaport", redisenv.Options{}); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("a bad URL should fail with one line, got %v", err)
	}
}

// TestURLFailoverRefuses checks that the single-node backend never pretends to fail over.
func TestURLFailoverRefuses(t *testing.T) {
	srv := openServer(t)
	env, err := redisenv.Open("redis://"+srv.InventoryOptions().Addr+"/2", redisenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.Nodes()[0].HoldReplication()
	if err := env.Nodes()[0].Failover(context.Background()); err == nil {
		t.Error("Failover on the url backend should return an error")
	}
	if env.Nodes()[0].Admin().Ping(context.Background()).Err() != nil {
		t.Error("the server should still answer after a refused failover")
	}
}
