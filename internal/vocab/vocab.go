// Package vocab is the words the lab judges a run in: the invariants' kinds, with their limits,
// and the type of a scenario's name, and how a count is said. It imports nothing of the lab's, so the referee that judges in them
// imports no Redis (package steps re-exports them for the steps and the learner).
package vocab

// Scenario names one scripted attack on a step. The names are used in reports, flags and JSON; the
// names themselves are package steps' (steps.Slow…), and what each does, what it judges, and its
// program live in internal/scenario, one file each.
type Scenario string

// Kind names one invariant a referee judges; a violation is reported by its Kind.
type Kind string

// The violation kinds, spelled as reports, tests and -json spell them.
const (
	Overlap        Kind = "overlap"         // two buyers inside the critical section at once
	Oversold       Kind = "oversold"        // orders confirmed minus units that left the shelf > 0
	ForeignRelease Kind = "foreign-release" // a process deleted a lock it did not own
	ForeignRenewal Kind = "foreign-renewal" // a process extended the lease of a lock it did not hold at that moment
	Stuck          Kind = "stuck"           // at the end the lock is held by a dead or finished owner while stock remains
	LostSales      Kind = "lost-sales"      // buyers turned away while stock remained
	ReentryFailed  Kind = "reentry-failed"  // a nested acquire of a lock the caller already holds failed or blocked
	Flood          Kind = "flood"           // more than FloodLimit Redis commands per confirmed order
	Starved        Kind = "starved"         // a buyer waiting inside Lock saw StarveLimit acquisitions by buyers that asked after it
	Idle           Kind = "idle"            // the lock sat free, longer than a woken waiter needs, for more than IdleLimit of the time buyers waited inside Lock
)

// StarveLimit is how many acquisitions by later askers a waiting buyer may see before it starves.
const StarveLimit = 3

// IdleLimit is the share of the time the lock may sit free, longer than a woken waiter needs (the
// referee's allowance) and the longest such gap aside, while a buyer waits for it, before a run
// is idle: waiters asleep in a back-off. Calibrated on the load scenario on a loaded machine
// (docs/architecture.md): spinning, pub/sub and queued steps measured 0 in 138 of 140 runs and
// at most 2.4 % (two stalls of one process), back-off steps at least 4.3 % (median 16 %).
const IdleLimit = 0.03

// FloodLimit is the number of Redis commands per confirmed order above which a run floods Redis.
const FloodLimit = 100

// Kinds lists every violation kind in report order.
var Kinds = []Kind{Overlap, Oversold, ForeignRelease, ForeignRenewal, Stuck, LostSales, ReentryFailed, Flood, Starved, Idle}
