package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// TestRoundTrips lists the commands each contender sends for its first three uncontended
// Lock + Unlock cycles on a server whose script cache was just flushed (run it with -v to read
// them), checks that the commands read on the wire are the ones go-redis's hooks saw, and pins two
// steps' counts (pinnedCycles). Hazard: it counts commands, and a command is a round trip only
// for a lock that sends one at a time on one node; 15 sends its three at once.
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
				hooked, wire := cnt.take()
				if !slices.Equal(slices.Sorted(slices.Values(hooked)), slices.Sorted(slices.Values(wire))) {
					t.Errorf("cycle %d: the wire carried %v, the hooks saw %v", len(cycles)+1, wire, hooked)
				}
				cycles = append(cycles, wire)
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

// TestWireCountsSubscribe: a waiter of 13, 14 or 16 dials a connection of its own and SUBSCRIBEs
// on it, which go-redis writes without running its hooks; the wire count has it, one per wait.
func TestWireCountsSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range contenders {
		switch c.name {
		case "lockstep-13_pubsub", "lockstep-14_fair", "lockstep-16_fencing":
		default:
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			addrs := needNodes(t, c.nodes)
			var cnt counter
			ps := newProcs()
			defer ps.stop()
			holder, _, close1 := newProc(c, addrs, "holder", &cnt, ps)
			defer close1()
			waiter, _, close2 := newProc(c, addrs, "waiter", &cnt, ps)
			defer close2()
			key := uniqueKey("subscribe", c.name)
			for _, l := range []steps.Locker{holder, waiter} { // warm: dial, load scripts
				rctx, done := c.newRequest(ctx)
				if ok, err := l.Lock(rctx, key); err != nil || !ok {
					t.Fatalf("warm-up Lock = %v, %v", ok, err)
				}
				if err := l.Unlock(rctx, key); err != nil {
					t.Fatalf("warm-up Unlock: %v", err)
				}
				done()
			}
			hctx, hdone := c.newRequest(ctx)
			defer hdone()
			if ok, err := holder.Lock(hctx, key); err != nil || !ok {
				t.Fatalf("holder's Lock = %v, %v", ok, err)
			}
			n0, hooked0, dials0 := cnt.n.Load(), cnt.hooked.Load(), cnt.dials.Load()
			cnt.rec.Store(true)
			go func() {
				time.Sleep(50 * time.Millisecond) // the waiter is subscribed by then
				holder.Unlock(hctx, key)
			}()
			wctx, wdone := c.newRequest(ctx)
			if ok, err := waiter.Lock(wctx, key); err != nil || !ok {
				t.Fatalf("waiter's Lock = %v, %v", ok, err)
			}
			if err := waiter.Unlock(wctx, key); err != nil {
				t.Fatalf("waiter's Unlock: %v", err)
			}
			wdone()
			hooked, wire := cnt.take()
			t.Logf("hooks saw %d: %s", len(hooked), strings.Join(hooked, " "))
			t.Logf("the wire carried %d: %s", len(wire), strings.Join(wire, " "))
			if n := slices.Index(wire, "subscribe"); n < 0 || slices.Contains(hooked, "subscribe") {
				t.Errorf("SUBSCRIBE on the wire: %v, seen by the hooks: %v; want on the wire only", n >= 0, slices.Contains(hooked, "subscribe"))
			}
			if dn, hn, dd := cnt.n.Load()-n0, cnt.hooked.Load()-hooked0, cnt.dials.Load()-dials0; dn != hn+1 || dd != 1 {
				t.Errorf("one wait: %d commands on the wire, %d hooked, %d dials; want one more on the wire (SUBSCRIBE) and 1 dial", dn, hn, dd)
			}
		})
	}
}
