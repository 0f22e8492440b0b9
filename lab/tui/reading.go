package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// lockReading is one reading of the lock (arena.Arena's Lock: value, TTL and owner of one moment),
// and the session time it was taken. The LOCK line says what one reading says, and nothing else,
// so it never contradicts itself.
type lockReading struct {
	st    arena.LockState
	nodes []arena.LockState // a quorum lock's every node, in node order (nil for one node)
	at    time.Duration
}

// read takes the reading from the arena x: the first node's lock, and on a quorum every node's.
func (r *lockReading) read(ctx context.Context, x *arena.Arena, quorum bool) {
	if quorum {
		r.nodes = x.Locks(ctx)
		r.st = r.nodes[0]
		return
	}
	r.st = x.Lock(ctx)
}

// setLock takes a reading, unless a newer one is already in.
func (a *board) setLock(r lockReading) {
	if a.read && r.at < a.lk.at {
		return
	}
	a.lk, a.read = r, true
}

// lockLine says who holds the lock and for how long: owner and TTL first, the value next, the key
// (with the run's prefix) last, so a narrow terminal cuts only the key.
func (a *board) lockLine(w int) string {
	head := sLabel.Render("LOCK") + " "
	if a.noLock {
		return head + "none — this step takes no lock: every buyer goes straight in"
	}
	if a.fenced > 0 && (a.done || a.rw != nil) {
		// what the lock could not stop, and the inventory did: the referee's words
		return ansi.Truncate(head+sWarn.Render("stale write refused at the inventory: ")+a.fenceBy, w, "…")
	}
	if a.multi() {
		return a.quorumLine(w)
	}
	var parts []string
	st := a.lk.st
	switch {
	case a.rw != nil, a.prog != nil && !a.done:
		// a replayed program has no Redis to read: the lock is as its events tell it
		s, where := snap{ev: referee.Event{At: a.now}, owner: a.owner, nodes: a.nodes}, "as the run tells it: "
		if a.rw != nil {
			s, where = a.hist.at(a.rw.at), "at the cursor: "
		}
		nv := s.nodes[0]
		if s.owner == 0 {
			return ansi.Truncate(head+where+"free"+sDim.Render(" · key "+a.lockKey), w, "…")
		}
		return ansi.Truncate(head+fmt.Sprintf("%sowner buyer %d · %s", where, s.owner, a.ttlLeft(nv, s.ev.At))+
			sDim.Render(" · key "+a.lockKey), w, "…")
	case a.done && a.rep != nil && a.rep.Stuck:
		return ansi.Truncate(head+sWarn.Render(fmt.Sprintf("run over: buyer %d still holds it while units remain (stuck)", a.rep.StuckOwner)), w, "…")
	case a.done && a.rep != nil && unprobed(a.rep):
		return ansi.Truncate(head+sWarn.Render("run over: the referee could not probe it at the end, so whether it was left held is not known"), w, "…")
	case a.done && a.rep != nil && a.rep.FinalStock <= 0:
		return ansi.Truncate(head+"run over: sold out (a lock left held would block nobody)", w, "…")
	case a.done:
		return ansi.Truncate(head+"run over: nobody was left holding it while units remained", w, "…")
	case !a.read:
		parts = append(parts, "not read yet")
	case st.Held:
		who := "held (its taker not seen yet)"
		switch {
		case st.Owner != 0 && a.owner == 0 && a.pic.Holds(st.Owner) == 0:
			// a key no hold has: its Lock wrote it and never said yes (a lost reply). The lane
			// draws holds, so it shows none: say why, not "owner"
			who = sWarn.Render(fmt.Sprintf("held by %s's write, though its Lock never said yes: nobody knows it holds it (the lane shows no hold)", a.buyerName(st.Owner)))
		case st.Owner != 0:
			who = "owner " + a.buyerName(st.Owner)
		}
		ttl := fmt.Sprintf("TTL %.2fs left", st.TTL.Seconds())
		if st.TTL < 0 {
			ttl = sWarn.Render("no TTL: held until deleted")
		}
		parts = append(parts, who, ttl, fmt.Sprintf("value %q", ansi.Truncate(st.Value, 14, "…")))
	case st.Owner != 0:
		parts = append(parts, sWarn.Render(fmt.Sprintf("free: buyer %d's lock expired in Redis, and buyer %d does not know yet", st.Owner, st.Owner)))
	default:
		parts = append(parts, "free")
	}
	if len(a.line) > 0 {
		names := make([]string, len(a.line))
		for i, b := range a.line {
			names[i] = "?"
			if b > 0 {
				names[i] = fmt.Sprintf("b%d", b)
			}
		}
		parts = slices.Insert(parts, min(1, len(parts)), "line: "+strings.Join(names, " → ")) // after the owner
	}
	parts = append(parts, sDim.Render("key "+a.lockKey))
	return ansi.Truncate(head+strings.Join(parts, " · "), w, "…")
}

// unprobed tells whether the referee could not probe the lock at the end of a run (stuck unseen).
func unprobed(rep *referee.Report) bool {
	for _, b := range rep.Untracked {
		if slices.Contains(b.Kinds, steps.Stuck) {
			return true
		}
	}
	return false
}

// buyerName is "buyer 3", or "buyer 3 (retired)" for a live buyer the learner took away.
func (a *board) buyerName(n int) string {
	if a.roster.retired[n] {
		return fmt.Sprintf("buyer %d (retired)", n)
	}
	return fmt.Sprintf("buyer %d", n)
}

// roster follows which live buyers are ordering, as the arena says (Live.Active): a buyer that was and
// is no longer is retired.
type roster struct {
	active      []int // the buyers ordering, oldest first
	retired     map[int]bool
	lastRetired int
}

// sync takes the buyers still ordering from the arena.
func (r *roster) sync(active []int) {
	for _, n := range r.active {
		if !slices.Contains(active, n) {
			r.retired[n], r.lastRetired = true, n
		}
	}
	for _, n := range active {
		delete(r.retired, n)
	}
	r.active = slices.Clone(active)
}
