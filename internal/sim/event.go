// Package sim is lockstep's arena: it runs buyers as simulated processes against a step's lock and
// order handler, injects faults through each process's Redis hook and the shop's work, and has a
// referee judge the invariants. It knows nothing about any particular step.
package sim

import (
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// EventKind says what happened in an Event.
type EventKind string

// The event kinds an arena emits.
const (
	EvStart       EventKind = "start"       // a buyer starts an order
	EvCommand     EventKind = "command"     // a buyer's process sent a Redis command (Detail: "GET stock")
	EvAcquired    EventKind = "acquired"    // the lock key appeared, written by Buyer
	EvReleased    EventKind = "released"    // Buyer deleted its own lock
	EvForeign     EventKind = "foreign"     // Buyer deleted the lock of Other
	EvExpired     EventKind = "expired"     // Other's lock ran out (seen at the next lock command)
	EvLost        EventKind = "lost"        // Other's lock vanished in a failover
	EvWaiting     EventKind = "waiting"     // Buyer's lock command found the lock held by Other (once an order)
	EvEnter       EventKind = "enter"       // Buyer read the stock (Stock): it is inside
	EvWrite       EventKind = "write"       // Buyer wrote the stock (Stock): its order is confirmed
	EvExit        EventKind = "exit"        // Buyer left the critical section
	EvDone        EventKind = "done"        // Buyer's order returned (Detail: "ok" or the error)
	EvRejected    EventKind = "rejected"    // Buyer was turned away while Stock units remained
	EvFault       EventKind = "fault"       // a fault acts on Buyer (Detail: the fault)
	EvFrozen      EventKind = "frozen"      // Buyer's process is frozen: none of its commands leave
	EvThawed      EventKind = "thawed"      // Buyer's process runs again
	EvPartitioned EventKind = "partitioned" // Buyer's links to the lock nodes are down
	EvHealed      EventKind = "healed"      // Buyer's links to the lock nodes are back
	EvCrashed     EventKind = "crashed"     // Buyer's process died
	EvFailover    EventKind = "failover"    // the lock primary died; the replica is primary now
	EvReentry     EventKind = "reentry"     // Buyer's nested acquire failed (Detail says how)
	EvViolation   EventKind = "violation"   // the referee found a violation (Kind, Detail: a sentence)
	EvRefused     EventKind = "refused"     // Buyer's Lock answered false or failed
	EvOverlap     EventKind = "overlap"     // Other's and Buyer's orders were inside together (Detail: a sentence)
	EvFenced      EventKind = "fenced"      // the inventory refused Buyer's stale fencing token (Detail says what)
	EvRestart     EventKind = "restart"     // lock node Node restarted without persistence and forgot every key
)

// Event is one thing that happened in an arena. Buyers are numbered from 1; 0 is nobody.
type Event struct {
	At     time.Duration // since the arena started
	Kind   EventKind
	Buyer  int
	Order  int // the buyer's k-th order, where an event belongs to one (0 if not)
	Other  int
	Stock  int
	Node   int // the lock node, for lock events; 0 is the first (and often only) one
	Detail string
	Viol   steps.Kind // for EvViolation
}

func (e Event) String() string {
	s := fmt.Sprintf("%7.1fms %-9s", float64(e.At.Microseconds())/1000, e.Kind)
	if e.Buyer != 0 {
		s += fmt.Sprintf(" buyer %d", e.Buyer)
	}
	if e.Other != 0 {
		s += fmt.Sprintf(" (of buyer %d)", e.Other)
	}
	if e.Detail != "" {
		s += " " + e.Detail
	}
	return s
}
