package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Load: commands per order of a spinning step are waiters × work ÷ time per spin. Under the race
// detector on 2 overloaded cores a spin was measured at up to 3 ms; 7 waiters and 10 × Work keep
// even that run well above the flood limit. The lease is 4 × TTL, so the work (a quarter of it)
// never outlives a lock: load measures traffic, nothing else. Each buyer pauses one Work between
// its orders (KeepOrdering), so a release finds the waiters asleep in a back-off as often as not:
// step 10's idle share over 3,000 plays in virtual time, 13–42 % (limit 3 %).
var Load = add(&Scenario{
	Name: steps.Load, Column: 9,
	What:   "8 buyers keep ordering, a pause apart, until 5 units are sold; Redis commands per confirmed order and the lock's idle time are counted",
	Judges: []steps.Kind{steps.Flood, steps.Idle},
	Stock:  5, Work: 10, Lease: 4,
	Play: func(s *arena.Stage) {
		for _, b := range s.Buyers(8) {
			b.KeepOrdering()
		}
	},
})
