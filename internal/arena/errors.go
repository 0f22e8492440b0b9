package arena

import "errors"

// Errors the arena's shop and hooks return. Hazard: a step that hides them (as the article's
// finally-return does) confirms orders that failed.
var (
	ErrWork     = errors.New("the business work failed")
	ErrCrashed  = errors.New("the process has crashed")
	ErrReentry  = errors.New("the nested call could not take the lock its caller holds")
	ErrNoHolder = errors.New("nobody holds the lock right now")
)

// ErrCannotStage is what a play answers for a scenario the backend cannot play: a failover with no
// replica to promote, a restart of a server the lab does not own, a step whose commands the
// server does not run (Step.Needs). It is no verdict: a matrix shows the cell as skipped, with
// the reason.
var ErrCannotStage = errors.New("the backend cannot stage this scenario")
