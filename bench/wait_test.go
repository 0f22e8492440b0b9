package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
	step09 "github.com/lockstep-lab/lockstep/steps/09_lua_unlock"
	wait "github.com/lockstep-lab/lockstep/steps/side_wait"
	"github.com/redis/go-redis/v9"
)

// BenchmarkWaitForReplica asks what issue 35's side road costs: after its SET NX, side_wait sends
// WAIT 1 TTL/4 and holds the lock only once a replica acknowledged the write. It runs on two
// redis-servers of its own, a primary and its replica (REPLICAOF), both 09 and side_wait on the
// primary, on keys of their own. b.N is the number of rounds; in each round both locks run
// cyclesPerRound uncontended Lock + Unlock cycles in a random order, and the round's ratio is
// side_wait's time over 09's. It reports the median ratio (wait/09) and logs its 95 % bootstrap
// interval. Hazard: the replica runs on the same cores and loopback as the primary, so WAIT's
// wait is the replica's turn on this machine's scheduler, not a network's round trip; contenders
// run on one server with no replica, where side_wait would refuse every lock, so it is not one.
func BenchmarkWaitForReplica(b *testing.B) {
	if servers.err != nil {
		b.Skipf("skipping: no redis-server to benchmark against: %v", servers.err)
	}
	var pair [2]string // a primary and its replica of their own: the contenders' servers keep none
	for i := range pair {
		addr, stop, err := startRedis()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(stop)
		pair[i] = addr
	}
	primary, replica := pair[0], pair[1]
	host, port, _ := strings.Cut(primary, ":")
	ctx := context.Background()
	rc := redis.NewClient(&redis.Options{Addr: replica})
	defer rc.Close()
	if err := rc.ReplicaOf(ctx, host, port).Err(); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the replica %s never linked to %s: %v\n%s", replica, primary, err, info)
		}
	}
	var arms [2]armOf
	for i, c := range []struct {
		name string
		new  func(steps.Proc) steps.Locker
	}{{"09_lua_unlock", step09.New}, {"side_wait", wait.New}} {
		rdb := redis.NewClient(&redis.Options{Addr: primary})
		b.Cleanup(func() { rdb.Close() })
		ps := newProcs()
		b.Cleanup(ps.stop)
		p := steps.Proc{ID: "bench-" + c.name, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Go: ps.Go, Ctx: ps.ctx, Now: time.Now}
		arms[i] = armOf{c.name, c.new(p), uniqueKey("wait", c.name)}
	}
	med, lo, hi, n := pairedRatio(b, arms)
	b.ReportMetric(med, "wait/09")
	b.Logf("side_wait / 09 per uncontended cycle on redis-server with one replica: median %.3f [%.3f–%.3f] over %d rounds of %d cycles", med, lo, hi, n, cyclesPerRound)
}
