package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// TwoRequests: one process, one Locker, two requests: the second starts once the first is
// inside, the first stays until the second has met the lock, and the second until the first is
// done.
var TwoRequests = add(&Scenario{
	Name: steps.TwoRequests, Column: 11,
	What:   "one process serves two orders at once with one Locker (two goroutines of one server)",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold},
	Move:   arena.FaultSecond,
	Play: func(s *arena.Stage) {
		b1 := s.Buyer()
		b1.SecondRequest()
		b1.Order()
	},
	Key:         "t",
	Label:       "2nd request",
	Help:        "its process starts a second order at once with the same Locker, as a server serves two requests: does the lock tell them apart?",
	NeedsHolder: true, Pressed: "its process starts a second order now, with the same Locker (a second request)",
	Follows: FollowsSecondOrder,
})
