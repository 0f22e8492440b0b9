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
// them), and pins two steps' counts (pinnedCycles). Hazard: it counts commands, and a command is a
// round trip only for a lock that sends one at a time on one node; 15 sends its three at once.
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
			if want, ok := pinnedCycles[c.name]; ok && !slices.EqualFunc(cycles, want, slices.Equal) {
				t.Errorf("commands per cycle = %v, want %v", cycles, want)
			}
		})
	}
}

// pinnedCycles are the commands of the first three cycles TestRoundTrips holds steps to. 09: 3 on
// the cold first cycle (SET NX PX, EVALSHA answered NOSCRIPT, EVAL), 2 from then on (SET NX PX,
// EVALSHA). 14, whose 2 round trips are issue 9's goal: lock.lua and unlock.lua, each sent as
// EVALSHA and, the first time, again as EVAL.
var pinnedCycles = map[string][][]string{
	"lockstep-09_lua_unlock": {{"set", "evalsha", "eval"}, {"set", "evalsha"}, {"set", "evalsha"}},
	"lockstep-14_fair":       {{"evalsha", "eval", "evalsha", "eval"}, {"evalsha", "evalsha"}, {"evalsha", "evalsha"}},
}
