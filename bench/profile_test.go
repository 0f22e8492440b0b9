package bench

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCycle runs one uncontended Lock + Unlock cycle per b.N for each contender alone, one
// sub-benchmark after another, as BenchmarkLockUnlock's cycle does it (a request per cycle for a
// lock owned by the request): it exists so that -cpuprofile and -memprofile see one lock at a
// time, e.g.
//
//	go test -run '^$' -bench 'BenchmarkCycle/lockstep-14_fair$' -benchtime 20000x \
//		-cpuprofile cpu.out -memprofile mem.out -memprofilerate 1
//
// Hazard: it is not interleaved, so its times drift with the machine from one sub-benchmark to the
// next and are not for comparing locks (BenchmarkLockUnlock is); its allocations are exact.
func BenchmarkCycle(b *testing.B) {
	for _, c := range contenders {
		b.Run(c.name, func(b *testing.B) {
			addrs := needNodes(b, c.nodes)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			cnt := new(counter)
			ps := newProcs()
			l, _, closeClients := newProc(c, addrs, "profile-1", cnt, ps)
			defer closeClients()
			defer ps.stop()
			key := uniqueKey("profile", c.name)
			cycle := func() {
				rctx, done := c.newRequest(ctx)
				defer done()
				if ok, err := l.Lock(rctx, key); err != nil || !ok {
					b.Fatalf("Lock(%s) = %v, %v on a free key", key, ok, err)
				}
				if err := l.Unlock(rctx, key); err != nil {
					b.Fatalf("Unlock(%s): %v", key, err)
				}
			}
			cycle() // warm: dial, load scripts
			cnt.n.Store(0)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				cycle()
			}
			b.StopTimer()
			b.ReportMetric(float64(cnt.n.Load())/float64(b.N), "cmds/op")
		})
	}
}
