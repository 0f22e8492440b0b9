package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Contention: everyone starts together; whoever gets in works half a TTL and stays until every
// other buyer has got in, been refused, or found the lock taken — but never past three quarters of
// a TTL from its work's start, so each is inside under its lease, whatever lock it is and however
// late a buyer's first command (a Sentinel client asks its Sentinels first). Three sales then take
// at least one and a half TTLs, whatever the machine's pace: a waiter whose patience is a number
// of short tries (the aspect's 30 of TTL/100) spends it while the lock is surely held.
var Contention = add(&Scenario{
	Name: steps.Contention, Column: 1,
	What:   "8 buyers start together against 3 units; each who gets in works half a TTL",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold, steps.LostSales},
	Served: 2,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		for _, b := range s.Buyers(8) {
			b.Order(arena.HoldUntil(s.AllSettled(b)), arena.HoldAtMost(3*T/4), arena.WorkAtLeast(T/2))
		}
	},
})
