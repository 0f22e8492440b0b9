package bench

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockstep-lab/lockstep/steps"
	step09 "github.com/lockstep-lab/lockstep/steps/09_lua_unlock"
	delex "github.com/lockstep-lab/lockstep/steps/side_delex"
	"github.com/redis/go-redis/v9"
)

// BenchmarkReleaseOneCommand asks issue 18's question: does releasing with one command (DELEX key
// IFEQ token, side_delex) instead of 09's EVALSHA script change the cost of an uncontended Lock +
// Unlock? It runs on the embedded backend (miniredis in this process), because redis-server 7.0,
// which contenders run on, has no DELEX (Redis ≥ 8.4, Valkey ≥ 9.2): side_delex is not in
// contenders for that reason. b.N is the number of rounds; in each round both locks run
// cyclesPerRound cycles, in a random order, on one miniredis each, and the round's ratio is
// side_delex's time over 09's. It reports the median ratio (delex/09) and logs its 95 % bootstrap
// interval. Hazard: miniredis runs a script and a command in-process, with no network or Lua VM
// costs like a real server's, so the ratio says what the client's side costs, not a server's.
func BenchmarkReleaseOneCommand(b *testing.B) {
	var arms [2]armOf
	for i, c := range []struct {
		name string
		new  func(steps.Proc) steps.Locker
	}{{"09_lua_unlock", step09.New}, {"side_delex", delex.New}} {
		m := miniredis.RunT(b)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		b.Cleanup(func() { rdb.Close() })
		ps := newProcs()
		b.Cleanup(ps.stop)
		p := steps.Proc{ID: "bench-" + c.name, Redis: rdb, Nodes: []*redis.Client{rdb}, TTL: ttl, Go: ps.Go, Ctx: ps.ctx, Now: time.Now}
		arms[i] = armOf{c.name, c.new(p), uniqueKey("release", c.name)}
	}
	med, lo, hi, n := pairedRatio(b, arms)
	b.ReportMetric(med, "delex/09")
	b.Logf("side_delex / 09 per uncontended cycle on miniredis: median %.3f [%.3f–%.3f] over %d rounds of %d cycles", med, lo, hi, n, cyclesPerRound)
}
