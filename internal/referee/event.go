// Package referee judges a run from its history alone: it reads each history.Record as it comes
// (or a saved history afterwards, lab judge), keeps what the lock and the shop are at each moment,
// announces each violation of an invariant (vocab's kinds) with the records that prove it, and at
// the end reports the verdict a scenario is judged on. It imports only the history, the words
// (vocab) and the shop's linearizability check (shopcheck): never the arena, a backend or the lab,
// so a verdict depends on what was recorded, not on how it was played. Hazard: the arena also asks
// it live questions while staging (who holds, who is inside, who is releasing), where a change to
// judging could change how a scenario plays; so the arena asks only Live, which reads the records'
// facts and no verdict, and stages only by events that are facts (Event.Staging).
package referee

import (
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// EventKind says what happened in an Event.
type EventKind string

// The event kinds: the referee's reading of each record, for the lab to draw.
const (
	EvStart       EventKind = "start"       // a buyer starts an order
	EvCommand     EventKind = "command"     // a buyer's process sent a command (Cmd)
	EvAcquired    EventKind = "acquired"    // Buyer's Lock call got a lock on Node (Handed: written for it by the previous holder)
	EvReleased    EventKind = "released"    // Buyer released its own lock
	EvForeign     EventKind = "foreign"     // Buyer released the lock of Other
	EvExpired     EventKind = "expired"     // Other's lock ran out (seen at the next command on the node; Due: when it ran out, where the watcher knows)
	EvLost        EventKind = "lost"        // Other's lock vanished in a failover or a restart
	EvFree        EventKind = "free"        // no lock is held any more
	EvWaiting     EventKind = "waiting"     // Buyer's Lock found the lock held by Other (once an order)
	EvWork        EventKind = "work"        // Buyer's order began its business work
	EvEnter       EventKind = "enter"       // Buyer read the stock (Stock, with its fencing Token if it showed one): it is inside, unless it peeks (Peek)
	EvWrite       EventKind = "write"       // Buyer wrote the stock (Stock, with its fencing Token if it showed one): its order is confirmed
	EvExit        EventKind = "exit"        // Buyer left the critical section
	EvDone        EventKind = "done"        // Buyer's order returned (Sold, Err)
	EvRejected    EventKind = "rejected"    // Buyer was turned away while Stock units remained
	EvFault       EventKind = "fault"       // a fault (Fault) acts on Buyer (Cmd: the command it froze before)
	EvFrozen      EventKind = "frozen"      // Buyer's process is frozen, at most D (Sentence: until what): none of its commands leave
	EvThawed      EventKind = "thawed"      // Buyer's process runs again, after D frozen
	EvPartitioned EventKind = "partitioned" // Buyer's links to the lock nodes are down, at most D (Sentence: until what)
	EvHealed      EventKind = "healed"      // Buyer's links to the lock nodes are back, after D
	EvCrashed     EventKind = "crashed"     // Buyer's process died
	EvFailover    EventKind = "failover"    // lock node Node's primary died; its replica is primary now (OK, Err; D: how long it took)
	EvReentry     EventKind = "reentry"     // Buyer's nested Lock: OK, or Err says why it failed
	EvViolation   EventKind = "violation"   // the referee found a violation (Viol, Sentence; Buyer, Other: whom it names)
	EvRefused     EventKind = "refused"     // Buyer's Lock answered false or failed
	EvOverlap     EventKind = "overlap"     // Other's and Buyer's orders were inside together (From, To, Sentence)
	EvFenced      EventKind = "fenced"      // the inventory refused Buyer's stale fencing Token (Write: its write)
	EvRestart     EventKind = "restart"     // lock node Node restarted without persistence and forgot every key (OK, Err)
	EvLine        EventKind = "line"        // a list of the run (Channel: its key) holds buyers Line, first first; Buyer joined it
	EvPublish     EventKind = "publish"     // Buyer's command published Sentence on channel Channel of lock node Node (a lock's wake-up)
	EvNested      EventKind = "nested"      // Buyer's hold is entered Depth times now: a Lock granted while it held the lock (a re-entry), or an Unlock after one; no hold began or ended
)

// Event is one thing that happened in an arena, typed: the lab draws from its fields and says it
// with Words. Buyers are numbered from 1; 0 is nobody.
type Event struct {
	At       time.Duration
	Kind     EventKind
	Buyer    int
	Order    int // the buyer's k-th order, where an event belongs to one (0 if not)
	Other    int
	Stock    int
	Node     int // the lock node, for lock events; 0 is the first (and often only) one
	Viol     vocab.Kind
	Cmd      *Command
	Fault    history.Fault
	D        time.Duration
	Token    int64
	Write    bool // EvFenced: the write was refused, not the read
	Handed   bool // EvAcquired
	Depth    int  // EvNested: how many Lock calls of its process have the hold now (1: the outer one alone)
	Granted  bool // EvEnter: the order's Lock call had said yes before this read (false: a read before its Lock, a peek, or an order that takes no lock)
	NoLock   bool // EvEnter: the run's step takes no lock (its history's header says so): the read is an entry with no Lock to say yes
	Sold     bool // EvDone
	OK       bool // EvReentry, EvFailover, EvRestart
	Err      string
	From, To time.Duration // EvOverlap
	Due      time.Duration // EvFree: when the lock came free (a lease runs out before it is seen); EvExpired: when the key ran out (0: not known)
	TTL      time.Duration // EvAcquired: the lock's lease as it was taken (-1: it never expires)
	On       string        // a lock event's node, by name, where the lock has several ("lock-2")
	Sentence string        // EvViolation, EvOverlap: the referee's own words; EvPublish: the message; EvFault, EvFrozen, EvPartitioned: what the move says it does
	Channel  string        // EvPublish: the channel, without the run's prefix; EvLine: the list's key
	Line     []int         // EvLine: the buyers in line, first first (0: an item no buyer put there)
	// Left (EvReleased, EvForeign, EvExpired, EvLost): what went is what a hold left on this
	// node after it had ended on another (a quorum's hold ends when its first key is gone). It
	// ends no hold and is no violation: the node's key is gone, and the lab draws it so.
	Left bool
	// Rewrote (EvForeign): the lock was written over (a blind SET of "free"), not deleted.
	Rewrote bool
	// NotJudgedBy (EvViolation): the scenario that does not judge Viol, which was seen anyway
	// ("" where it is judged). Hazard: such a kind is no violation of the run; every screen says
	// it as "also seen", never as a VIOLATION or a red flag.
	NotJudgedBy string
}

// Command is what a process sent, as the timeline draws it.
type Command struct {
	Name   string // the first command's name, upper case: "SET", "EVALSHA"
	NX     bool   // a SET … NX (or SETNX) among them
	Stock  bool   // a shop command at the inventory
	OnLock bool   // it names a key of a lock node (the shop's lock, or another key of the run)
	Node   int    // the lock node it went to
	// In is the call the commands were sent in: "lock", "unlock", or "" outside both (a
	// watchdog's renewal, a handler's own command). Hazard: a script's name says nothing of what
	// it does, so a lock script and an unlock script look alike but for In.
	In string
	// Script: the first command runs a script or a function on the server (EVAL…, FCALL…).
	Script bool
	// Label names the commands the way the timeline shows them: "SET NX lock", "GET stock",
	// "EVALSHA lock @2"; a pipeline's are joined with " + ". Long is how Words says them: a
	// node by its name ("EVALSHA lock on lock-2").
	Label, Long string
}

// Staging tells whether the arena may stage by e: an event that says a fact of the records (an
// order began its work, read or wrote the stock, returned; a Lock call was refused, found the lock
// taken, got it; the lock came free), from what Live reads, never a checker's finding (a
// violation, an overlap, a foreign release, a buyer turned away). Hazard: the arena's waits and
// its idle probe see these alone (arena's emit); a wait on any other kind would let a change to
// judging change how a scenario plays.
func (e Event) Staging() bool {
	switch e.Kind {
	case EvEnter, EvWrite, EvWork, EvDone, EvWaiting, EvRefused, EvFree, EvAcquired:
		return true
	}
	return false
}

// Peek tells whether e is a read of the stock by an order whose Lock has not said yes yet, in a
// step that takes a lock: a fail-fast peek, a count read before Lock. It takes nobody inside,
// for the stage, the picture, the log and Words alike. Hazard: Granted alone cannot tell a peek
// from a read of a step that takes no lock (both are false); NoLock, which the referee copies
// from the history's header, does. Granted is the referee's (a Lock call of the order returned
// yes), not a key taken.
func (e Event) Peek() bool { return e.Kind == EvEnter && !e.NoLock && !e.Granted }
