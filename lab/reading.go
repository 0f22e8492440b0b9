package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps"
)

// lockReading is one reading of the lock from the lock server, and the session time it was taken.
// The LOCK line says what one reading says, and nothing else, so it never contradicts itself.
type lockReading struct {
	st sim.LockState
	at time.Duration
	// pictureOwner: st.Owner is not sim's but must be taken from the picture when the reading is
	// applied. sim.Run keeps a canned run's arena to itself, so the lab reads Redis directly and
	// the feed orders the reading after every event sent before it. Hazard: an event sent while
	// the reading is under way can still come first (a window of one Redis round trip).
	pictureOwner bool
}

// setLock takes a reading, unless a newer one is already in.
func (a *arena) setLock(r lockReading) {
	if a.read && r.at < a.lk.at {
		return
	}
	if r.pictureOwner {
		r.st.Owner = a.owner
	}
	a.lk, a.read = r, true
}

// lockLine says who holds the lock and for how long: owner and TTL first, the value next, the key
// (with the run's prefix) last, so a narrow terminal cuts only the key.
func (a *arena) lockLine(w int) string {
	head := sLabel.Render("LOCK") + " "
	if a.noLock {
		return head + "none — this step takes no lock: every buyer goes straight in"
	}
	var parts []string
	st := a.lk.st
	switch {
	case a.done && a.rep != nil && a.rep.Stuck:
		return ansi.Truncate(head+sWarn.Render(fmt.Sprintf("run over: buyer %d still holds it while units remain (stuck)", a.rep.StuckOwner)), w, "…")
	case a.done && a.rep != nil && unprobed(a.rep):
		return ansi.Truncate(head+sWarn.Render("run over: the referee could not probe it at the end, so whether it was left held is not known"), w, "…")
	case a.done:
		return ansi.Truncate(head+"run over: nobody was left holding it while units remained", w, "…")
	case !a.read:
		parts = append(parts, "not read yet")
	case st.Held:
		who := "held (its taker not seen yet)"
		if st.Owner != 0 {
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
	parts = append(parts, sDim.Render("key "+a.lockKey))
	return ansi.Truncate(head+strings.Join(parts, " · "), w, "…")
}

// unprobed tells whether the referee could not probe the lock at the end of a run (stuck unseen).
func unprobed(rep *sim.Report) bool {
	for _, b := range rep.Untracked {
		if slices.Contains(b.Kinds, steps.Stuck) {
			return true
		}
	}
	return false
}

// buyerName is "buyer 3", or "buyer 3 (retired)" for a live buyer the learner took away.
func (a *arena) buyerName(n int) string {
	if a.roster.retired[n] {
		return fmt.Sprintf("buyer %d (retired)", n)
	}
	return fmt.Sprintf("buyer %d", n)
}

// roster follows which live buyers are ordering. Hazard: sim.Live is not asked; the lab follows
// its documented rule — processes are numbered in the order they are made, and SetBuyers retires
// the newest first — so a change of that rule in sim must change this too.
type roster struct {
	made        int   // processes made so far
	active      []int // the buyers ordering, oldest first
	retired     map[int]bool
	lastRetired int
}

// set makes n buyers active, retiring the newest or making new ones.
func (r *roster) set(n int) {
	for len(r.active) > n {
		last := r.active[len(r.active)-1]
		r.retired[last], r.lastRetired = true, last
		r.active = r.active[:len(r.active)-1]
	}
	for len(r.active) < n {
		r.made++
		r.active = append(r.active, r.made)
	}
}
