package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// armOf is one lock of a paired benchmark: a Locker of its own, on its own key.
type armOf struct {
	name string
	l    steps.Locker
	key  string
}

// pairedRatio runs b.N rounds of two locks' uncontended Lock + Unlock cycles, cyclesPerRound each
// per round, in a random order, and returns the median over rounds of the second's time over the
// first's, with its 95 % bootstrap interval. Hazard: a cycle that fails (a Lock that answers false)
// fails b: a ratio of a lock that did no work would read as a fast lock.
func pairedRatio(b *testing.B, arms [2]armOf) (med, lo, hi float64, rounds int) {
	ctx := context.Background()
	cycle := func(a armOf) error {
		ok, err := a.l.Lock(ctx, a.key)
		if err != nil || !ok {
			return fmt.Errorf("%s: Lock: %v, %v", a.name, ok, err)
		}
		return a.l.Unlock(ctx, a.key)
	}
	for _, a := range arms { // warm: dial, load the script
		if err := cycle(a); err != nil {
			b.Fatal(err)
		}
	}
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		var took [2]time.Duration
		for _, i := range rand.Perm(2) {
			start := time.Now()
			for range cyclesPerRound {
				if err := cycle(arms[i]); err != nil {
					b.Fatal(err)
				}
			}
			took[i] = time.Since(start)
		}
		ratios = append(ratios, float64(took[1])/float64(took[0]))
	}
	b.StopTimer()
	slices.Sort(ratios)
	_, med, _ = quartiles(ratios)
	lo, hi = bootstrap(len(ratios), func(idx []int) float64 {
		s := make([]float64, len(idx))
		for k, i := range idx {
			s[k] = ratios[i]
		}
		slices.Sort(s)
		_, m, _ := quartiles(s)
		return m
	})
	return med, lo, hi, len(ratios)
}
