package arena

import (
	"errors"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// Faults lists the faults a learner can inject, in key order.
var Faults = []history.Fault{history.FaultCrash, history.FaultError, history.FaultSlow, history.FaultPause, history.FaultUnlockRace, history.FaultFailover, history.FaultReentrant, history.FaultPartition, history.FaultSecond}

// Errors the arena's shop and hooks return. Hazard: a step that hides them (as the article's
// finally-return does) confirms orders that failed.
var (
	ErrWork     = errors.New("sim: the business work failed")
	ErrCrashed  = errors.New("sim: the process has crashed")
	ErrReentry  = errors.New("sim: the nested call could not take the lock its caller holds")
	ErrNoHolder = errors.New("sim: nobody holds the lock right now")
)

// faultOf returns the fault a scenario plays on its first buyer.
func faultOf(s steps.Scenario) history.Fault {
	switch s {
	case steps.Error:
		return history.FaultError
	case steps.Crash:
		return history.FaultCrash
	case steps.Slow:
		return history.FaultSlow
	case steps.Pause:
		return history.FaultPause
	case steps.UnlockRace:
		return history.FaultUnlockRace
	case steps.Failover:
		return history.FaultFailover
	case steps.Reentrant:
		return history.FaultReentrant
	case steps.Partition:
		return history.FaultPartition
	}
	return history.FaultNone
}
