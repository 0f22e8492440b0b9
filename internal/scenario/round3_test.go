package scenario_test

import (
	"testing"

	"github.com/lockstep-lab/lockstep/steps"
)

// The third round's learner-style locks (issue 24), each beside a control that differs in the one
// way that matters, played as TestLearnerLocks plays its own.

var (
	// the lock under `lock:` + the key Lock is given: outside the run's keys.
	outsideKey = func(l *learner) { l.key = func(k string) string { return "lock:" + k } }
)

// round3Cases are the classes of issue 24, with their controls.
func round3Cases() []learnerCase {
	type cell = learnerCell
	outside := "your Lock wrote `lock:lockstep:…:lock:product:1001`, outside the run's keys; lock the key Lock is given"
	return []learnerCase{
		// a fault that found nowhere to strike is '?', never ✓; the key outside is named
		{"7. a back-off lock outside the run's keys", newLearner(outsideKey, backOff, getThenDel), orderDefer, []cell{
			{steps.Load, nil, outside}, {steps.Greedy, nil, "the greedy buyer's head start found nowhere to strike: " + outside},
			{steps.UnlockRace, nil, "the unlock-race found nowhere to strike: " + outside},
			{steps.Failover, nil, "the failover found no lock to strike: " + outside},
			{steps.Slow, nil, outside}}, false},
		{"7. …the control: the same lock on the key it is given", newLearner(backOff, getThenDel), orderDefer, []cell{
			{steps.Load, []steps.Kind{steps.Idle}, ""}, {steps.Greedy, []steps.Kind{steps.Starved}, ""},
			{steps.UnlockRace, []steps.Kind{steps.ForeignRelease}, ""}}, false},
		{"a Locker that lies, under load", newLearner(liar), orderDefer, []cell{
			{steps.Load, nil, "none wrote a key of the run"}, {steps.Greedy, nil, "never released a lock its Lock wrote"}}, false},
	}
}

// TestLearnerLocksRoundThree plays issue 24's learner-style locks and their controls.
func TestLearnerLocksRoundThree(t *testing.T) { playLearners(t, round3Cases()) }
