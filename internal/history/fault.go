package history

// Fault names something the arena does to a buyer's process, through its Redis hook or the shop's
// work, never through code in a step: what a RecFault record's What holds. The names are the
// arena's moves' (arena.FaultSlow…); a record carries its move's own words (Record.Says).
type Fault string
