// Package sim is lockstep's arena: it runs buyers as simulated processes against a step's lock and
// order handler, injects faults through each process's Redis hook and the shop's work, records
// everything it observes as a History, and has a Referee judge that history. It knows nothing
// about any particular step.
package referee

import (
	"fmt"
	"slices"
	"strings"
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
	EvEnter       EventKind = "enter"       // Buyer read the stock (Stock, with its fencing Token if it showed one): it is inside
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

func (c *Command) long() string {
	if c == nil {
		return ""
	}
	return c.Long
}

// isScript reports whether a command runs a script or a function on the server.
func isScript(name string) bool {
	name = strings.ToUpper(name)
	return strings.HasPrefix(name, "EVAL") || strings.HasPrefix(name, "FCALL")
}

// CommandOf is the Command of cmds sent to lock node node in call call (0: none, or not known),
// as the referee knows the run so far.
func (r *Referee) CommandOf(cmds []history.Cmd, node, call int) *Command {
	return commandOf(cmds, node, call, r)
}

// commandOf is the Command of cmds sent to lock node node in call call (0: none, or not known).
func commandOf(cmds []history.Cmd, node, call int, r *Referee) *Command {
	if len(cmds) == 0 {
		return nil
	}
	c := &Command{Name: strings.ToUpper(cmds[0].Name), Node: node, Script: isScript(cmds[0].Name)}
	if rc := r.calls[call]; rc != nil {
		c.In = map[bool]string{true: history.CallLock, false: history.CallUnlock}[rc.lock]
	}
	parts := make([]string, 0, len(cmds))
	var long []string
	for _, cmd := range cmds {
		name := strings.ToUpper(cmd.Name)
		if name == "SETNX" {
			c.NX = true
		}
		target := "(lock server)"
		for i, a := range cmd.Args {
			if strings.EqualFold(a, "nx") && i > 0 {
				name += " NX"
				c.NX = true
			}
			if a == r.h.LockKey {
				target, c.OnLock = "lock", true
			} else if _, ok := r.node(node)[a]; ok && target == "(lock server)" {
				target, c.OnLock = a, true
			}
		}
		name += " " + target
		l := name
		if len(r.h.Nodes) > 1 {
			name += fmt.Sprintf(" @%d", node+1)
			l += " on " + r.nodeName(node)
		}
		parts = append(parts, name)
		long = append(long, l)
	}
	c.Label = strings.Join(parts, " + ")
	c.Long = strings.Join(long, " + ")
	if c.Script { // which script it is, by the call it ran in
		switch c.In {
		case history.CallLock:
			c.Label, c.Long = c.Label+" in Lock", c.Long+", in its Lock"
		case history.CallUnlock:
			c.Label, c.Long = c.Label+" in Unlock", c.Long+", in its Unlock"
		case "":
			if call != 0 {
				break // in a call the referee no longer knows: say nothing of it
			}
			c.Label, c.Long = c.Label+" outside Lock/Unlock", c.Long+", outside its Lock and Unlock calls (a renewal, or the handler's own)"
		}
	}
	return c
}

// stockCommand is the Command of a shop operation.
func stockCommand(what string) *Command {
	switch what {
	case history.StockRead, history.StockReadRefused:
		return &Command{Name: "GET", Stock: true, Label: "GET stock", Long: "GET stock"}
	case history.StockSell, history.StockSoldOut:
		return &Command{Name: "EVALSHA", Stock: true, Label: "EVALSHA sell stock", Long: "EVALSHA sell stock"}
	}
	return &Command{Name: "SET", Stock: true, Label: "SET stock", Long: "SET stock"}
}

// errWords is an error as a sentence says it: the steps package's own errors without their
// package's name ("steps: sold out" is "sold out"); any other error as it is.
func errWords(err string) string {
	return strings.TrimPrefix(err, "steps: ")
}

func (e Event) String() string {
	return fmt.Sprintf("%7.1fms %-9s %s", float64(e.At.Microseconds())/1000, e.Kind, e.Words())
}

// Words says the event in plain words: the log, rewind and -json all say it this way.
func (e Event) Words() string {
	who := fmt.Sprintf("buyer %d", e.Buyer)
	if e.Buyer == 0 {
		who = "the end-of-run probe" // it asks for the lock as a new buyer would, once the orders are done
	}
	other := fmt.Sprintf("buyer %d", e.Other)
	on := ""
	if e.On != "" {
		on = " on " + e.On
	}
	switch e.Kind {
	case EvStart:
		return who + " starts an order"
	case EvCommand:
		return who + " sends " + e.Cmd.long()
	case EvLine:
		names := make([]string, len(e.Line))
		for i, b := range e.Line {
			names[i] = "nobody's item"
			if b > 0 {
				names[i] = fmt.Sprintf("buyer %d", b)
			}
		}
		line := "the line (" + e.Channel + ")" + on
		switch {
		case e.Buyer > 0 && len(e.Line) > 0:
			return fmt.Sprintf("%s gets in %s, place %d: %s", who, line, slices.Index(e.Line, e.Buyer)+1, strings.Join(names, ", "))
		case len(e.Line) == 0:
			return line + " is empty"
		}
		return line + " is now: " + strings.Join(names, ", ")
	case EvPublish:
		return fmt.Sprintf("%s's command publishes %q on channel %s%s: whoever subscribed to it wakes", who, e.Sentence, e.Channel, on)
	case EvAcquired:
		if e.Handed {
			return who + " is handed the lock" + on
		}
		return who + " takes the lock" + on
	case EvReleased:
		if e.Left {
			return who + " deletes what was left of its lock" + on + " (its hold had ended on another node)"
		}
		return who + " releases its lock" + on
	case EvForeign:
		if e.Left {
			return fmt.Sprintf("%s deletes what was left of %s's lock%s (that hold had ended on another node)", who, other, on)
		}
		return fmt.Sprintf("%s deletes the lock that %s held%s", who, other, on)
	case EvExpired:
		if e.Left {
			return "what was left of " + other + "'s lock" + on + " runs out (its TTL)"
		}
		if e.Other == 0 {
			return "a key ran out" + on + e.due()
		}
		return other + "'s lock runs out (its TTL)" + on + e.due()
	case EvLost:
		if e.Left {
			return "what was left of " + other + "'s lock" + on + " is lost: the node forgot it"
		}
		return other + "'s lock" + on + " is lost: the node forgot it"
	case EvFree:
		return "nobody holds the lock"
	case EvWaiting:
		if e.Other == e.Buyer {
			return who + " finds the lock held by its own process: another order of its own took it"
		}
		return fmt.Sprintf("%s finds the lock%s held by %s", who, on, other)
	case EvWork:
		return who + " works"
	case EvEnter:
		return fmt.Sprintf("%s is inside: read stock %d%s", who, e.Stock, e.withToken())
	case EvWrite:
		return fmt.Sprintf("%s wrote stock %d%s: order confirmed", who, e.Stock, e.withToken())
	case EvExit:
		return who + " leaves the critical section"
	case EvDone:
		switch {
		case e.Err == "" && e.Sold:
			return who + "'s order returned: sold"
		case e.Err == "":
			return who + "'s order returned without selling anything"
		case e.Sold:
			return who + "'s order sold; then " + errWords(e.Err)
		}
		return who + "'s order failed: " + errWords(e.Err)
	case EvRejected:
		return fmt.Sprintf("%s is turned away, %d on the shelf", who, e.Stock)
	case EvFault:
		if e.Sentence == "" { // a history saved before faults said what they do
			return fmt.Sprintf("%s is hit: %s", who, e.Fault)
		}
		return fmt.Sprintf("%s is hit: %s: %s", who, e.Fault, e.Sentence)
	case EvFrozen:
		if e.Sentence == "" {
			return fmt.Sprintf("%s's process is frozen for %s: none of its commands leave", who, e.D)
		}
		return fmt.Sprintf("%s's process is frozen, none of its commands leave, %s (at most %s)", who, e.Sentence, e.D)
	case EvThawed:
		if e.D == 0 {
			return who + " runs again"
		}
		return fmt.Sprintf("%s runs again, frozen %s", who, roundD(e.D))
	case EvPartitioned:
		if e.Sentence == "" {
			return fmt.Sprintf("%s is cut off from the lock server for %s (the inventory still answers)", who, e.D)
		}
		return fmt.Sprintf("%s is cut off from the lock server (the inventory still answers), %s (at most %s)", who, e.Sentence, e.D)
	case EvHealed:
		if e.D == 0 {
			return who + " reaches the lock server again"
		}
		return fmt.Sprintf("%s reaches the lock server again, cut off %s", who, roundD(e.D))
	case EvCrashed:
		return who + " crashed"
	case EvFailover:
		if !e.OK {
			return "the failover" + on + " failed: " + e.Err
		}
		return "the lock primary" + on + " died; the replica, which never saw the last lock write, is primary now" + e.took()
	case EvRestart:
		if !e.OK {
			return "the restart" + on + " failed: " + e.Err
		}
		if e.On != "" {
			return e.On + " restarted without persistence: it forgot every key"
		}
		return "the lock node restarted without persistence: it forgot every key"
	case EvReentry:
		if e.OK {
			return who + "'s nested lock got in"
		}
		return who + "'s nested lock failed: " + errWords(e.Err)
	case EvViolation:
		return fmt.Sprintf("VIOLATION %s: %s", e.Viol, e.Sentence)
	case EvRefused:
		return who + "'s Lock said no"
	case EvOverlap:
		return "overlap: " + e.Sentence
	case EvFenced:
		what := "read"
		if e.Write {
			what = "write"
		}
		return fmt.Sprintf("FENCED: the inventory refused %s's stale %s (token %d)", who, what, e.Token)
	}
	return string(e.Kind)
}

// took is " (the failover took 4.3s: …)" where a node change took long enough for a person to
// notice: a Sentinel's election, a container's restart.
func (e Event) took() string {
	if e.D < 100*time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (it took %s: meanwhile the lock's clients had no primary to write to)", e.D.Round(10*time.Millisecond))
}

// due is ", due at 203 ms" for an expiry seen later than the key ran out (at the next command on
// its node), "" when it was seen then or when is not known.
func (e Event) due() string {
	if e.Due <= 0 || e.At-e.Due < time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (due at %s, seen at the next command on the node)", roundD(e.Due))
}

// withToken is " with token 5" for a stock command that showed the inventory a fencing token.
func (e Event) withToken() string {
	if e.Token == 0 {
		return ""
	}
	return fmt.Sprintf(" with token %d", e.Token)
}

// roundD is d as a person reads it: to the millisecond.
func roundD(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
