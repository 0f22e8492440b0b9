package scenario

import (
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/steps"
)

// UnlockRace: the holder writes at W and freezes inside its Unlock, before one of the commands
// that touch what its Lock wrote (each gap in a play of its own). The second buyer comes 0.3 TTL
// after the holder's lease ended; the holder thaws once the second has got in or been refused,
// and the second stays inside until the holder is done.
var UnlockRace = add(&Scenario{
	Name: steps.UnlockRace, Column: 5,
	What:    "the holder freezes just before a command of its Unlock that touches its lock, until a second buyer who comes after its lease ran out is in",
	Judges:  []steps.Kind{steps.ForeignRelease},
	Move:    arena.FaultUnlockRace,
	EachGap: true,
	Play: func(s *arena.Stage) {
		t := s.Unit()
		b1, b2 := s.Buyer(), s.Buyer()
		b1.FreezeBeforeUnlockCommand(s.Try())
		b1.Order()
		s.Wait(b1.Under())
		s.Sleep(t.Work + 13*t.TTL/10)
		b2.Order(arena.HoldUntil(b1.Done()))
	},
	Key:         "u",
	Label:       "unlock-race",
	Help:        "it freezes just before the command that deletes its lock, until another buyer gets in or, a TTL on, still finds the lock taken (at most 4 × TTL)",
	NeedsHolder: true, Pressed: "will freeze just before the command that deletes its lock, until another buyer gets in (at most 4 × TTL)",
})
