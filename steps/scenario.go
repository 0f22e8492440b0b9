package steps

import "github.com/lockstep-lab/lockstep/internal/vocab"

// Scenario names one scripted attack on a step. The names are used in reports, flags and JSON; what
// each does, what it judges, and its program live in internal/scenario, one file each.
type Scenario = vocab.Scenario

// The scenarios, in the order the matrix shows them.
const (
	Contention  Scenario = "contention"
	Error       Scenario = "error"
	Crash       Scenario = "crash"
	Slow        Scenario = "slow"
	UnlockRace  Scenario = "unlock-race"
	Reentrant   Scenario = "reentrant"
	Pause       Scenario = "pause"
	Failover    Scenario = "failover"
	Load        Scenario = "load"
	Partition   Scenario = "partition"
	TwoRequests Scenario = "two-requests"
	Greedy      Scenario = "greedy"
	Restart     Scenario = "restart"
	ClockSkew   Scenario = "clock-skew"
	LostReply   Scenario = "lost-reply"
)

// Kind names one invariant a referee judges; a violation is reported by its Kind. (The kinds are
// internal/vocab's, so that the referee judges in them without importing this package's Redis
// client.)
type Kind = vocab.Kind

// The violation kinds, spelled as reports, tests and -json spell them.
const (
	Overlap        = vocab.Overlap
	Oversold       = vocab.Oversold
	ForeignRelease = vocab.ForeignRelease
	ForeignRenewal = vocab.ForeignRenewal
	Stuck          = vocab.Stuck
	LostSales      = vocab.LostSales
	ReentryFailed  = vocab.ReentryFailed
	Flood          = vocab.Flood
	Starved        = vocab.Starved
	Idle           = vocab.Idle
)

// StarveLimit, IdleLimit and FloodLimit are the referee's limits (internal/vocab says each).
const (
	StarveLimit = vocab.StarveLimit
	IdleLimit   = vocab.IdleLimit
	FloodLimit  = vocab.FloodLimit
)

// Kinds lists every violation kind in report order.
var Kinds = vocab.Kinds
