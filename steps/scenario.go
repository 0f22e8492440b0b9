package steps

// Scenario names one scripted attack on a step. The names are used in reports, flags and JSON.
type Scenario string

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
)

// Scenarios lists every scenario in matrix order.
var Scenarios = []Scenario{Contention, Error, Crash, Slow, UnlockRace, Reentrant, Pause, Failover, Load, Partition, TwoRequests, Greedy, Restart, ClockSkew}

// Kind names one invariant a referee judges; a violation is reported by its Kind.
type Kind string

// The violation kinds, spelled as reports, tests and -json spell them.
const (
	Overlap        Kind = "overlap"         // two buyers inside the critical section at once
	Oversold       Kind = "oversold"        // orders confirmed minus units that left the shelf > 0
	ForeignRelease Kind = "foreign-release" // a process deleted a lock it did not own
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
var Kinds = []Kind{Overlap, Oversold, ForeignRelease, Stuck, LostSales, ReentryFailed, Flood, Starved, Idle}

// Judges lists the kinds each scenario judges. A scenario judges only these, so its verdict does
// not depend on side effects it was not built to provoke.
var Judges = map[Scenario][]Kind{
	Contention:  {Overlap, Oversold, LostSales},
	Error:       {Stuck},
	Crash:       {Stuck},
	Slow:        {Overlap, Oversold, ForeignRelease},
	UnlockRace:  {ForeignRelease},
	Reentrant:   {ReentryFailed, Overlap},
	Pause:       {Overlap, Oversold},
	Failover:    {Overlap, Oversold},
	Load:        {Flood, Idle},
	Partition:   {Overlap, Oversold},
	TwoRequests: {Overlap, Oversold},
	Greedy:      {Starved},
	Restart:     {Overlap, Oversold},
	ClockSkew:   {Overlap, Oversold},
}

// Describe says in a few words what a scenario does to the first lock holder.
var Describe = map[Scenario]string{
	Contention:  "many buyers start together against small stock",
	Error:       "the first holder's work returns an error",
	Crash:       "the first holder's process dies inside the critical section",
	Slow:        "the first holder's work takes ~3 × TTL, process alive",
	UnlockRace:  "the holder freezes just before the command that deletes its lock, for longer than the TTL",
	Reentrant:   "the work calls a helper that takes the same lock again",
	Pause:       "the holder freezes (stop-the-world) between reading and writing stock, ~3 × TTL",
	Failover:    "the lock primary dies after the holder's lock write, before replication; replica promoted",
	Load:        "8 buyers keep ordering until 5 units are sold; Redis commands per confirmed order and the lock's idle time are counted",
	Partition:   "the holder loses its link to the lock server (not to the inventory) for ~3 × TTL inside its work, then writes",
	TwoRequests: "one process serves two orders at once with one Locker (two goroutines of one server)",
	Greedy:      "one buyer orders again the instant its order returns; after each release its retry reaches Redis first",
	Restart:     "a lock node restarts without persistence and forgets the lock while its holder works",
	ClockSkew:   "a second process whose wall clock runs 3 × TTL ahead asks for the lock while the holder works",
}

// ParseScenario returns the scenario with the given name.
func ParseScenario(name string) (Scenario, bool) {
	for _, s := range Scenarios {
		if string(s) == name {
			return s, true
		}
	}
	return "", false
}
