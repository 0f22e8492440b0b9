//go:build lockstep_seeded

package explore

import (
	"math/rand/v2"
	"sync"
	_ "unsafe" // go:linkname
)

// The grader lab explore plays in is built with the lockstep_seeded tag and
// -ldflags=-checklinkname=0 (grading.SeededFlags) and seeds the randomness a lock draws for
// itself, as madsim intercepts getrandom: each program's bubble starts math/rand/v2's global
// source, which a lock's back-off jitter draws from (steps 10–16, the aspect), from one seed, so
// that a program plays to one history (lab explore -check). Go lets nobody seed that source; this
// reaches it by its name. Hazard: it depends on math/rand/v2's unexported globalRand (Go 1.26)
// and links only with the linker's check of such names off; a build without the tag uses
// seed_off.go instead, and there a lock's jitter is the runtime's.

//go:linkname globalRand math/rand/v2.globalRand
var globalRand *rand.Rand

// lockedPCG is a PCG source safe for the goroutines of one bubble.
type lockedPCG struct {
	mu sync.Mutex
	p  *rand.PCG
}

func (l *lockedPCG) Uint64() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.p.Uint64()
}

// SeedMathRand starts math/rand/v2's global source from seed. Hazard: it replaces the source for
// the whole process; call it at the start of a bubble, before the lock's goroutines draw.
func SeedMathRand(seed uint64) {
	*globalRand = *rand.New(&lockedPCG{p: rand.NewPCG(seed, 0x6c6f636b73746570)})
}
