package sim

import (
	"errors"

	"github.com/lockstep-lab/lockstep/steps"
)

// Fault is something the arena does to a buyer's process, through its Redis hook or the shop's work,
// never through code in a step.
type Fault string

// The faults. Each acts on a process from outside the step: its hook, its shop's work.
const (
	FaultNone       Fault = ""
	FaultError      Fault = "error"       // the work inside the critical section returns an error
	FaultCrash      Fault = "crash"       // the process dies: no command of it, deferred or not, reaches Redis
	FaultSlow       Fault = "slow"        // the work takes 3 × TTL while the process stays alive
	FaultPause      Fault = "pause"       // stop-the-world for 3 × TTL, just before the stock write leaves
	FaultUnlockRace Fault = "unlock-race" // the process freezes just before the command that deletes its lock
	FaultFailover   Fault = "failover"    // the next lock write is not replicated, and the primary then dies
	FaultReentrant  Fault = "reentrant"   // the work calls a helper that takes the same lock again
	FaultPartition  Fault = "partition"   // the process loses its links to the lock nodes for 3 × TTL, inside its work
	FaultSecond     Fault = "second"      // the process starts a second order at once, with the same Locker
)

// Faults lists the faults a learner can inject, in key order.
var Faults = []Fault{FaultCrash, FaultError, FaultSlow, FaultPause, FaultUnlockRace, FaultFailover, FaultReentrant, FaultPartition, FaultSecond}

// Errors the arena's shop and hooks return. Hazard: a step that hides them (as the article's
// finally-return does) confirms orders that failed.
var (
	ErrWork     = errors.New("sim: the business work failed")
	ErrCrashed  = errors.New("sim: the process has crashed")
	ErrReentry  = errors.New("sim: the nested call could not take the lock its caller holds")
	ErrNoHolder = errors.New("sim: nobody holds the lock right now")
)

// faultOf returns the fault a scenario plays on its first buyer.
func faultOf(s steps.Scenario) Fault {
	switch s {
	case steps.Error:
		return FaultError
	case steps.Crash:
		return FaultCrash
	case steps.Slow:
		return FaultSlow
	case steps.Pause:
		return FaultPause
	case steps.UnlockRace:
		return FaultUnlockRace
	case steps.Failover:
		return FaultFailover
	case steps.Reentrant:
		return FaultReentrant
	case steps.Partition:
		return FaultPartition
	}
	return FaultNone
}
