package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

const (
	// ttl is every lock's lease: long enough that no lock expires in a benchmark, so the
	// watchdogs of 08/09 start and stop but never fire.
	ttl = 10 * time.Second
	// retrySleep is the pause between tries of the non-blocking steps 04–06 when the key is taken.
	retrySleep = peerBackoff
	// lockTimeout bounds one acquisition in time; maxTries bounds it in tries of Lock.
	lockTimeout = 10 * time.Second
	maxTries    = 100_000
)

// procs runs the goroutines the Lockers start through steps.Proc.Go (the watchdogs of 08/09) with
// one context, cancelled by stop, which then waits for all of them.
type procs struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newProcs() *procs {
	ps := &procs{}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	return ps
}

func (ps *procs) Go(f func(ctx context.Context)) {
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		f(ps.ctx)
	}()
}

func (ps *procs) stop() {
	ps.cancel()
	ps.wg.Wait()
}

var keySeq atomic.Int64

// uniqueKey names a lock key no other benchmark run of this binary uses.
func uniqueKey(kind, name string) string {
	return fmt.Sprintf("lockstep-bench:%s:%s:%d", kind, name, keySeq.Add(1))
}

// BenchmarkLockUnlock measures one uncontended Lock + Unlock cycle of one key by one process:
// ns/op, and rtt/op, the Redis commands sent per cycle. Each sub-benchmark first runs one cycle
// untimed, so the connection is dialled and any Lua script is loaded (TestRoundTrips shows the
// first, cold cycle).
func BenchmarkLockUnlock(b *testing.B) {
	needRedis(b)
	for _, c := range contenders {
		b.Run(c.name, func(b *testing.B) {
			var cnt counter
			rdb := newClient(&cnt)
			defer rdb.Close()
			ps := newProcs()
			defer ps.stop()
			l := c.new(steps.Proc{ID: "bench-1", Redis: rdb, TTL: ttl, Go: ps.Go})
			key := uniqueKey("uncontended", c.name)
			// A deadline as a request would carry (redislock adds one of its own otherwise).
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()

			cycle := func() {
				ok, err := l.Lock(ctx, key)
				if err != nil || !ok {
					b.Fatalf("Lock(%s) = %v, %v on a free key", key, ok, err)
				}
				if err := l.Unlock(ctx, key); err != nil {
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
			b.ReportMetric(float64(cnt.n.Load())/float64(b.N), "rtt/op")
		})
	}
}

// BenchmarkContended runs procs processes (goroutines, each with its own client and Locker) that
// take one key b.N times in all, with an empty critical section. ns/op is per acquisition; rtt/op
// counts every command of every process (failed tries, spins, unlocks) per acquisition;
// p50/p99-handoff-ns is the time from one holder's Unlock returning to the next holder's Lock
// returning; switch-% is the share of acquisitions that went to a different process than the
// previous one (the rest were re-taken by the process that had just unlocked: barging).
func BenchmarkContended(b *testing.B) {
	needRedis(b)
	for _, c := range contenders {
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/procs=%d", c.name, n), func(b *testing.B) {
				contended(b, c, n)
			})
		}
	}
}

// span is one acquisition: when its Lock and its Unlock returned, since the start of the run.
type span struct {
	proc          int
	locked, freed time.Duration
}

func contended(b *testing.B, c contender, n int) {
	var cnt counter
	ps := newProcs()
	defer ps.stop()
	key := uniqueKey("contended", c.name)
	ctx, abort := context.WithCancel(context.Background())
	defer abort()

	lockers := make([]steps.Locker, n)
	for i := range n {
		rdb := newClient(&cnt)
		defer rdb.Close()
		lockers[i] = c.new(steps.Proc{ID: fmt.Sprintf("bench-%d", i), Redis: rdb, TTL: ttl, Go: ps.Go})
		// warm: dial, load scripts
		if err := acquire(ctx, lockers[i], key, c.blocking); err != nil {
			b.Fatalf("warm-up Lock: %v", err)
		}
		if err := lockers[i].Unlock(ctx, key); err != nil {
			b.Fatalf("warm-up Unlock: %v", err)
		}
	}

	var (
		remaining atomic.Int64
		failed    atomic.Pointer[error]
		wg        sync.WaitGroup
		start     = make(chan struct{})
		spans     = make([][]span, n)
	)
	remaining.Store(int64(b.N))
	var t0 time.Time
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fail := func(err error) {
				failed.CompareAndSwap(nil, &err)
				abort()
			}
			for remaining.Add(-1) >= 0 {
				if err := acquire(ctx, l, key, c.blocking); err != nil {
					fail(err)
					return
				}
				locked := time.Since(t0)
				// The critical section: empty.
				if err := l.Unlock(ctx, key); err != nil {
					fail(fmt.Errorf("Unlock: %w", err))
					return
				}
				spans[i] = append(spans[i], span{i, locked, time.Since(t0)})
			}
		}()
	}
	cnt.n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	t0 = time.Now()
	close(start)
	wg.Wait()
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatalf("%s with %d procs: %v", c.name, n, *err)
	}
	b.ReportMetric(float64(cnt.n.Load())/float64(b.N), "rtt/op")

	all := slices.Concat(spans...)
	slices.SortFunc(all, func(x, y span) int { return int(x.locked - y.locked) })
	var handoffs []time.Duration
	switches := 0
	for k := 1; k < len(all); k++ {
		// The next holder's Lock can return before the previous holder's Unlock reply has been
		// read (the DEL ran on Redis, the SET NX after it, and the second reply was scheduled
		// first): that hand-off counts as 0.
		handoffs = append(handoffs, max(0, all[k].locked-all[k-1].freed))
		if all[k].proc != all[k-1].proc {
			switches++
		}
	}
	if len(handoffs) > 0 {
		slices.Sort(handoffs)
		b.ReportMetric(float64(percentile(handoffs, 0.50)), "p50-handoff-ns")
		b.ReportMetric(float64(percentile(handoffs, 0.99)), "p99-handoff-ns")
		b.ReportMetric(100*float64(switches)/float64(len(handoffs)), "switch-%")
	}
}

// percentile returns the q-th quantile of sorted (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// acquire takes key with l, within lockTimeout and maxTries. A non-blocking Locker that answers
// false is asked again after retrySleep; a blocking one that gave up (redsync after its 32 tries)
// is asked again at once.
func acquire(ctx context.Context, l steps.Locker, key string, blocking bool) error {
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	for try := 1; ; try++ {
		ok, err := l.Lock(ctx, key)
		if err != nil {
			return fmt.Errorf("Lock (try %d): %w", try, err)
		}
		if ok {
			return nil
		}
		if try >= maxTries {
			return fmt.Errorf("Lock: key still taken after %d tries", try)
		}
		if !blocking {
			t := time.NewTimer(retrySleep)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("Lock: key still taken after %v (%d tries)", lockTimeout, try)
			}
			return err
		}
	}
}
