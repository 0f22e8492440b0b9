package history

// Fault names something the arena does to a buyer's process, through its Redis hook or the shop's
// work, never through code in a step: what a RecFault record's What holds.
type Fault string

// The faults, by the names records and events give them.
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
	FaultRestart    Fault = "restart"     // the lock node restarts without persistence, forgetting every key
	FaultLostReply  Fault = "lost-reply"  // a lock command's reply is lost: it landed, its client saw a timeout
)
