package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRoundTrips lists the commands each contender sends for its first three uncontended
// Lock + Unlock cycles on a server whose script cache was just flushed (run it with -v to read
// them), and pins the final step's count: 3 on the cold first cycle (SET NX PX, EVALSHA answered
// NOSCRIPT, EVAL), 2 from then on (SET NX PX, EVALSHA).
func TestRoundTrips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range contenders {
		t.Run(c.name, func(t *testing.T) {
			addrs := needNodes(t, c.nodes)
			var cnt counter
			for _, addr := range addrs {
				admin := redis.NewClient(&redis.Options{Addr: addr})
				err := admin.ScriptFlush(ctx).Err()
				admin.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			ps := newProcs()
			defer ps.stop()
			l, nodes, closeClients := newProc(c, addrs, "rtt-1", &cnt, ps)
			defer closeClients()
			for _, rdb := range nodes {
				if err := rdb.Ping(ctx).Err(); err != nil { // dial before recording
					t.Fatal(err)
				}
			}
			key := uniqueKey("rtt", c.name)
			cnt.rec.Store(true)
			var cycles [][]string
			for range 3 {
				rctx, done := c.newRequest(ctx)
				if ok, err := l.Lock(rctx, key); err != nil || !ok {
					t.Fatalf("Lock = %v, %v", ok, err)
				}
				if err := l.Unlock(rctx, key); err != nil {
					t.Fatalf("Unlock: %v", err)
				}
				done()
				cycles = append(cycles, cnt.take())
			}
			for i, cmds := range cycles {
				t.Logf("cycle %d: %d commands: %s", i+1, len(cmds), strings.Join(cmds, " "))
			}
			if c.name == "lockstep-09_lua_unlock" {
				want := [][]string{{"set", "evalsha", "eval"}, {"set", "evalsha"}, {"set", "evalsha"}}
				if !slices.EqualFunc(cycles, want, slices.Equal) {
					t.Errorf("commands per cycle = %v, want %v", cycles, want)
				}
			}
		})
	}
}
