package referee

import (
	"time"

	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The referee's findings, each with its sentence: the one place the words for a violation live.

// Overlap is a time two orders were inside the critical section together: each read the stock
// before the other wrote what it computed from its read.
type Overlap struct {
	A    int           `json:"a"` // the buyer whose order got in first
	B    int           `json:"b"` // the buyer whose order got in while A's was inside (may be A)
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
}

// Foreign is a lock deleted or replaced by a process that did not own it.
type Foreign struct {
	By      int           `json:"by"`
	Owner   int           `json:"owner"`
	Node    int           `json:"node"`
	At      time.Duration `json:"at_ns"`
	Rewrote bool          `json:"rewrote,omitempty"` // written over (a blind SET of "free"), not deleted
}

// Renewal is a lock's lease extended by a process that did not hold it at that moment (PEXPIRE,
// a renewing script, a SET XX of the same value): a stray or unchecked watchdog keeping another's
// lock alive.
type Renewal struct {
	By    int           `json:"by"`
	Owner int           `json:"owner"`
	Node  int           `json:"node"`
	At    time.Duration `json:"at_ns"`
	Cmd   string        `json:"cmd"` // the command that renewed it, as the timeline labels it
	// Dead: the holder's process had died (its lock kept alive for nobody); Done: its orders had
	// all ended.
	Dead bool `json:"dead,omitempty"`
	Done bool `json:"done,omitempty"`
}

// ReplyError is an error a lock node replied to a command of the lock with (an unknown command,
// EXECABORT, WRONGTYPE, NOSCRIPT, a script's error): the first of each command and error, and
// how many times it came.
type ReplyError struct {
	Buyer int    `json:"buyer"`
	In    string `json:"in,omitempty"` // the call it was sent in: "lock", "unlock", or "" (neither)
	Cmd   string `json:"cmd"`          // the command, upper case: "HPEXPIRE"
	Err   string `json:"err"`          // the server's reply, its first line
	// Server names the node's server ("Redis 7.0.15"), and Lacks says it does not run the
	// command, as it said itself.
	Server string        `json:"server,omitempty"`
	Lacks  bool          `json:"lacks,omitempty"`
	Times  int           `json:"times"`
	At     time.Duration `json:"at_ns"`
}

// Rejection is an order that sold nothing and wrote nothing while units remained: turned away.
type Rejection struct {
	Buyer int           `json:"buyer"`
	Order int           `json:"order,omitempty"` // the order's id in the history
	Stock int           `json:"stock"`           // units on the shelf when it was turned away
	At    time.Duration `json:"at_ns"`
}

// Reentry is a nested acquire that failed.
type Reentry struct {
	Buyer int           `json:"buyer"`
	Why   string        `json:"why"`
	At    time.Duration `json:"at_ns"`
}

// Blind is something the referee could not observe, and the kinds it leaves unjudged.
type Blind struct {
	Kinds []vocab.Kind `json:"kinds"`
	What  string       `json:"what"`
}

// Starve is a buyer that waited inside Lock while buyers that asked after it got the lock.
type Starve struct {
	Buyer  int           `json:"buyer"`
	Passed int           `json:"passed"` // acquisitions by later askers it saw while it waited
	At     time.Duration `json:"at_ns"`  // when it had seen StarveLimit of them
}

// idleShare is the idle gaps' time, the longest aside, as a share of the time from the first
// release to the last; idle gaps are those longer than their allowance.
func (r *Referee) idleShare() float64 {
	span := r.last - r.first
	if span <= 0 {
		return 0
	}
	var sum, longest time.Duration
	for _, g := range r.gaps {
		if r.idle(g) {
			sum += g.length
			longest = max(longest, g.length)
		}
	}
	return float64(sum-longest) / float64(span)
}

// idleAllowanceX is how many probe delays a gap may last before it counts as idle: a woken
// waiter's way to the lock is the wake itself (a publish read off its socket, or its own timer),
// its goroutine, and a script that may take two round trips (EVALSHA refused, then EVAL), where
// the probe makes one hop and one PING. Measured on a loaded machine, the fair queue's (14) gaps
// ran up to 4 probe delays.
const idleAllowanceX = 4

// idle tells whether gap g outlasted its allowance: the grace (TTL/80), or idleAllowanceX times
// what the idle probe needed after the same release, whichever is longer.
func (r *Referee) idle(g gap) bool {
	return g.length > max(r.h.Timing.TTL/80, idleAllowanceX*r.probes[g.from])
}

// idleGaps counts the gaps an order waited across, and those of them that were idle.
func (r *Referee) idleGaps() (idle, of int) {
	for _, g := range r.gaps {
		if r.idle(g) {
			idle++
		}
	}
	return idle, len(r.gaps)
}
