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
// EVALSHA). 14 and 16, whose 2 round trips are issue 9's goal (and issue 17's, once the step lost
// its benchmark-only code): lock.lua and unlock.lua, each sent as EVALSHA and, the first time,
// again as EVAL.
var pinnedCycles = map[string][][]string{
	"lockstep-09_lua_unlock": {{"set", "evalsha", "eval"}, {"set", "evalsha"}, {"set", "evalsha"}},
	"lockstep-14_fair":       {{"evalsha", "eval", "evalsha", "eval"}, {"evalsha", "evalsha"}, {"evalsha", "evalsha"}},
	"lockstep-16_fencing":    {{"evalsha", "eval", "evalsha", "eval"}, {"evalsha", "evalsha"}, {"evalsha", "evalsha"}},
}

// TestWireCountsSubscribe: a waiter of 13, 14 or 16 dials a connection for its subscription and
// SUBSCRIBEs on it, which go-redis writes without running its hooks; the wire count has it. A
// waiter of 13 does it on every wait; 14 and 16 subscribe once per process, so a second wait of the
// same process dials nothing and subscribes to nothing.
func TestWireCountsSubscribe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range contenders {
		var perWait bool // subscribes on every wait, not once per process
		switch c.name {
		case "lockstep-13_pubsub":
			perWait = true
		case "lockstep-14_fair", "lockstep-16_fencing":
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
			for wait := 1; wait <= 2; wait++ {
				hctx, hdone := c.newRequest(ctx)
				if ok, err := holder.Lock(hctx, key); err != nil || !ok {
					t.Fatalf("holder's Lock = %v, %v", ok, err)
				}
				n0, hooked0, dials0 := cnt.n.Load(), cnt.hooked.Load(), cnt.dials.Load()
				cnt.rec.Store(true)
				unlocked := make(chan struct{})
				go func() {
					defer close(unlocked)
					time.Sleep(50 * time.Millisecond) // the waiter is subscribed by then
					holder.Unlock(hctx, key)
				}()
				wctx, wdone := c.newRequest(ctx)
				if ok, err := waiter.Lock(wctx, key); err != nil || !ok {
					t.Fatalf("wait %d: waiter's Lock = %v, %v", wait, ok, err)
				}
				if err := waiter.Unlock(wctx, key); err != nil {
					t.Fatalf("wait %d: waiter's Unlock: %v", wait, err)
				}
				wdone()
				<-unlocked
				hdone()
				hooked, wire := cnt.take()
				t.Logf("wait %d: hooks saw %d: %s", wait, len(hooked), strings.Join(hooked, " "))
				t.Logf("wait %d: the wire carried %d: %s", wait, len(wire), strings.Join(wire, " "))
				subscribes, dials := 0, 0
				if wait == 1 || perWait {
					subscribes, dials = 1, 1
				}
				if n := slices.Index(wire, "subscribe"); (n >= 0) != (subscribes == 1) || slices.Contains(hooked, "subscribe") {
					t.Errorf("wait %d: SUBSCRIBE on the wire: %v, seen by the hooks: %v; want on the wire: %v, by the hooks: never", wait, n >= 0, slices.Contains(hooked, "subscribe"), subscribes == 1)
				}
				if dn, hn, dd := cnt.n.Load()-n0, cnt.hooked.Load()-hooked0, cnt.dials.Load()-dials0; dn != hn+int64(subscribes) || dd != int64(dials) {
					t.Errorf("wait %d: %d commands on the wire, %d hooked, %d dials; want %d more on the wire (SUBSCRIBE) and %d dials", wait, dn, hn, dd, subscribes, dials)
				}
			}
		})
	}
}
