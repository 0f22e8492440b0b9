package arena

import (
	"fmt"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// Faults that strike at a point defined by what a process did, observed at the servers, never by
// the lock's shape. Each is one named thing here: what it arms, where it strikes, and what a run
// says when it found nowhere to strike.
//
//   - failover: the lock node's replication is held back before anything is written; the node
//     fails over right after the holder's Lock call returns holding a lock written on it,
//     whatever the keys;
//   - restart: the node restarts right after that same moment (or, for an order that takes no
//     lock, once it works);
//   - unlock-race: the holder freezes before one of the commands of its Unlock that names a key
//     it held as the call began; a scripted run plays each such command's gap in a play of its
//     own (Run), so a release of two commands is raced between them, one of one command only
//     before it;
//   - the faults of the work (error, crash, slow, reentrant, partition) and the pause (at the
//     stock write) strike in the shop's calls, whatever the lock.
//
// A fault that found nowhere to strike makes the cell "no verdict", with its reason (a nowhere
// record), never ✓; where the order takes no lock at all, a lock fault has nothing to act on and
// says so in a note, and the shop is judged as it is.

// staging is what is armed in an arena for a Lock call to set off.
type staging struct {
	failover *armed
	restart  *armed
}

// armed is a node fault waiting for a holder's Lock: on node, after a Lock of buyer (0: anyone)
// that returns holding a lock written there.
type armed struct {
	node, buyer int
	struck      bool
	strike      func(p *process) // what it does, the caller holding nothing
}

// afterLock is told of every Lock call that returned: an armed node fault whose moment it is
// strikes now, before the call's caller goes on.
func (a *Arena) afterLock(p *process, c *call, ok bool) {
	if !ok || p.n == 0 {
		return
	}
	a.mu.Lock()
	var due []*armed
	for _, x := range []*armed{a.stage.failover, a.stage.restart} {
		if x == nil || x.struck || (x.buyer != 0 && x.buyer != p.n) {
			continue
		}
		if len(a.ref.HoldKeys(p.n)[x.node]) > 0 {
			x.struck = true
			due = append(due, x)
		}
	}
	a.mu.Unlock()
	for _, x := range due {
		x.strike(p)
	}
}

// failoverNow fails node i over, holding its turn: what an armed failover strikes with.
func (a *Arena) failoverNow(i int) func(*process) {
	return func(*process) {
		e := a.nodes[i]
		e.turn.Lock()
		defer e.turn.Unlock()
		a.failover(e)
	}
}

// lockCalls is how many Lock calls p has made.
func (a *Arena) lockCalls(p *process) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return p.lockCalls
}

// nowhere records that the scenario's fault found nowhere to strike, and why: the cell gets no
// verdict.
func (a *Arena) nowhere(format string, args ...any) {
	a.recordNow(history.Record{Kind: history.RecNowhere, What: fmt.Sprintf(format, args...)})
}

// note records what of the scenario did not happen as staged, and is no gap in the verdict.
func (a *Arena) note(format string, args ...any) {
	a.recordNow(history.Record{Kind: history.RecNote, What: fmt.Sprintf(format, args...)})
}

// nodeFaultFinish says, after a run, why an armed node fault did not strike: buyer 1's order took
// no lock (a note: nothing to act on), or its Lock wrote nothing on the node (no verdict).
func (a *Arena) nodeFaultFinish(x *armed, holder *process, what string) {
	a.mu.Lock()
	struck := x.struck
	a.mu.Unlock()
	if struck {
		return
	}
	name := a.NodeNames()[x.node]
	if a.lockCalls(holder) == 0 {
		a.note("the %s had no lock to strike: buyer %d's order takes none", what, holder.n)
		return
	}
	a.nowhere("the %s found no lock to strike: buyer %d's Lock never returned holding a key it wrote on %s", what, holder.n, name)
}

// faultFinish says, after a run, why the fault armed on buyer 1's process never struck.
func (a *Arena) faultFinish(p *process, f history.Fault) {
	p.mu.Lock()
	left := p.armed == f
	p.mu.Unlock()
	if !left {
		return
	}
	where := "Shop.Work"
	if f == history.FaultPause {
		where = "Shop.SetStock, Shop.SetStockFenced or Shop.Sell"
	}
	a.nowhere("the %s fault never struck: buyer %d's order never called %s, where it strikes", f, p.n, where)
}

// raceFinish says, after a scripted unlock-race play, why the freeze did not strike.
func (a *Arena) raceFinish(p *process) {
	p.mu.Lock()
	r := *p.race
	p.mu.Unlock()
	switch {
	case r.struck:
	case a.lockCalls(p) == 0:
		a.note("buyer %d's order takes no lock: there is no release to race", p.n)
	case r.unlocks == 0:
		a.nowhere("the unlock-race found nowhere to strike: buyer %d never called Unlock holding a lock its Lock wrote", p.n)
	default:
		a.nowhere("the unlock-race found nowhere to strike: buyer %d's Unlock sent no command that names a key its Lock wrote", p.n)
	}
}

// ordinal is "1st", "2nd", "3rd", "4th"…
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprint(n) + suffix
}

// joinAnd joins "a", "b" and "c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
