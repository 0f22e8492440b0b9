package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// Pause: the holder's whole process stops just before its stock write leaves, until the second
// buyer, who comes 2.4 TTL after it got in, has got in or been refused (at most 6 TTL); the
// second stays inside until the holder is done.
var Pause = add(&Scenario{
	Name: steps.Pause, Column: 7,
	What:   "the holder freezes (stop-the-world) just before its stock write, until a second buyer who comes 2.4 × TTL later is in",
	Judges: []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRenewal},
	Move:   arena.FaultPause,
	Play: func(s *arena.Stage) {
		T := s.Unit().TTL
		b1, b2 := s.Buyer(), s.Buyer()
		b1.PauseBeforeWrite()
		b1.Order()
		s.Wait(b1.Under())
		s.Sleep(12 * T / 5)
		b2.Order(arena.HoldUntil(b1.Done()))
	},
	Key:         "p",
	Label:       "pause",
	Help:        "stop-the-world just before its stock write leaves, until another buyer gets in or, a TTL on, still finds the lock taken (at most 6 × TTL)",
	NeedsHolder: true, Pressed: "will stop the world just before its stock write leaves, until another buyer gets in (at most 6 × TTL)",
})
