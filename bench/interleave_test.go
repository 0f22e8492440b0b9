package bench

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// batch is what one contender did in one round: ops lock + unlock cycles (or acquisitions), how
// long they took, the commands its clients sent and the heap allocations made while it ran.
// Hazard: bytes and allocs come from runtime.MemStats, which counts every goroutine of the binary;
// they are exact only while no other contender's goroutine runs, which interleave ensures by
// running one batch at a time.
type batch struct {
	ops     int           // the ops that elapsed and cmds count
	elapsed time.Duration // the time they took (contended: the window)
	cmds    int64         // commands written on the wire (see counter)
	dials   int64         // connections dialled, in the same span as cmds
	allOps  int           // the ops bytes and allocs count (contended: every acquisition of the round)
	bytes   uint64
	allocs  uint64

	// Contended batches only.
	waits    []time.Duration // per acquisition: from asking (the first Lock call) to holding
	handoffs []time.Duration // from one holder's Unlock returning to the next holder's Lock returning
	switches int             // acquisitions taken by another process than the one before
}

// interleaved is one interleaved run: every contender's batch, round by round.
type interleaved struct {
	key    string // the testing name of the benchmark that ran it (one run per -count is kept)
	bench  string // "LockUnlock" or "Contended": the first part of every emitted line's name
	suffix string // appended to each contender's name in the emitted lines ("/procs=4/cs=1ms")
	title  string // the Markdown table's heading
	procs  int    // processes per contender (contended), 0 for the uncontended benchmark
	cs     time.Duration
	locks  []contender
	rounds [][]batch // rounds[r][i]: contender i in round r
}

// interleave runs b.N rounds of r.locks. In each round every contender runs one batch (batchOf),
// one after the other, in an order shuffled afresh each round (a fixed seed, so every run uses the
// same orders), so that no contender always runs first or always follows the same neighbour. Drift
// of the machine (another process waking up, the CPU clock, the GC) therefore falls on all of them
// alike, and a contender's ratio to another in the same round cancels most of it. Hazard: what
// does not cancel is interference between neighbours — a batch that leaves garbage makes the next
// one pay for the collection — which the shuffle spreads but cannot remove.
func interleave(b *testing.B, r *interleaved, batchOf func(i int) (batch, error)) {
	rng := rand.New(rand.NewPCG(0x10c5, uint64(len(r.locks))))
	runtime.GC()
	b.ResetTimer()
	for range b.N {
		row := make([]batch, len(r.locks))
		for _, i := range rng.Perm(len(r.locks)) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			bt, err := batchOf(i)
			runtime.ReadMemStats(&after)
			if err != nil {
				b.Fatalf("%s%s: %v", r.locks[i].name, r.suffix, err)
			}
			bt.bytes = after.TotalAlloc - before.TotalAlloc
			bt.allocs = after.Mallocs - before.Mallocs
			row[i] = bt
		}
		r.rounds = append(r.rounds, row)
	}
	b.StopTimer()
	// The framework's own line for this benchmark is a whole round of every contender; ns/op
	// would read as one lock's figure, so it is replaced by ns/round.
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/round")
	record(b, r)
}

// runLog keeps, for every benchmark, the run of its last call in each -count: the testing
// framework calls a benchmark function first with b.N = 1 (a probe) and then with the b.N it
// settled on, and only the last call's run is the result.
type runLog struct {
	mu   sync.Mutex
	runs []*interleaved
}

// registry is the runs report prints when the binary ends.
var registry runLog

// record files r as the result of b's current -count (see runLog.add).
func record(b *testing.B, r *interleaved) { registry.add(b.Name(), b.N, r) }

// add files r, the run of the benchmark named key with n rounds: n = 1 starts a new -count, any
// larger n replaces the run of the call before. Hazard: with -benchtime=1x the probe is the
// result, a single round.
func (l *runLog) add(key string, n int, r *interleaved) {
	r.key = key
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > 1 {
		for k := len(l.runs) - 1; k >= 0; k-- {
			if l.runs[k].key == key {
				l.runs[k] = r
				return
			}
		}
	}
	l.runs = append(l.runs, r)
}

// quantile returns the q-th quantile of sorted by linear interpolation between the closest ranks
// (R's type 7, what most tools call the default). Hazard: sorted must be sorted and non-empty.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// quartiles returns the first quartile, the median and the third quartile of xs (not modified).
func quartiles(xs []float64) (q1, med, q3 float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	return quantile(s, 0.25), quantile(s, 0.5), quantile(s, 0.75)
}

// bootstrapResamples is how many times bootstrap resamples the rounds.
const bootstrapResamples = 1000

// bootstrap returns a 95 % percentile-bootstrap interval of stat over n rounds: stat is computed
// on bootstrapResamples resamples of the round indices, drawn with replacement (a fixed seed, so a
// run's tables can be recomputed), and the 2.5th and 97.5th percentiles of those values are the
// interval. Hazard: it treats rounds as independent draws; rounds close in time share the
// machine's state, so the true interval is somewhat wider, more so for statistics that do not
// cancel drift (absolute times) than for ratios within a round.
func bootstrap(n int, stat func(idx []int) float64) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(0xb007, uint64(n)))
	vals := make([]float64, bootstrapResamples)
	idx := make([]int, n)
	for k := range vals {
		for j := range idx {
			idx[j] = rng.IntN(n)
		}
		vals[k] = stat(idx)
	}
	slices.Sort(vals)
	return quantile(vals, 0.025), quantile(vals, 0.975)
}

// nanos converts durations to float64 nanoseconds, sorted.
func nanos(ds []time.Duration) []float64 {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	slices.Sort(xs)
	return xs
}
