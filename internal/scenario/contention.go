package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Contention: everyone starts together; whoever gets in stays until every other buyer has got
// in, been refused, or found the lock taken.
var Contention = add(&Scenario{
	Name: steps.Contention, Column: 1,
	What:   "many buyers start together against small stock",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold, steps.LostSales},
	Play: func(s *arena.Stage) {
		for _, b := range s.Buyers(8) {
			b.Order(arena.HoldUntil(s.AllSettled(b)))
		}
	},
})
