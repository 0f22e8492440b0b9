package tui

import (
	"fmt"
	"slices"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockstep-lab/lockstep/internal/referee"
)

// Rewind: while the orders are held (space), or once a canned run has finished, , and . move a
// cursor through the session's events one at a time (home and end: the first and the last), the
// timeline marks the cursor's column, and one line says what happened there, in words: the
// referee's own sentences where it has some. The LOCK line and a quorum's node lines say the lock
// as it was at the cursor.

// histN bounds the events a session keeps for rewind; past it the older half is dropped (the
// timeline's ring has forgotten them long before, unless spinners flood it).
const histN = 20000

// snap is one event and the lock as it stood right after it.
type snap struct {
	ev    referee.Event
	owner int
	nodes []nodeView
}

// history is a session's events, oldest first. Indexes are absolute: they stay valid when the
// oldest events are dropped.
type trail struct {
	base int // events dropped from the front
	s    []snap
}

func (h *trail) add(e referee.Event, a *board) {
	if len(h.s) == histN {
		h.s = append(h.s[:0], h.s[histN/2:]...)
		h.base += histN / 2
	}
	h.s = append(h.s, snap{ev: e, owner: a.owner, nodes: slices.Clone(a.nodes)})
}

func (h *trail) last() int     { return h.base + len(h.s) - 1 }
func (h *trail) at(i int) snap { return h.s[i-h.base] }

// rewind is the cursor: the event it is on, and the timeline's right edge when rewind began (the
// view holds still while the cursor moves inside it).
type rewind struct {
	at   int
	endB int64
}

// first is the first event the timeline can still draw (its ring keeps ringN columns).
func (a *board) firstDrawn() int {
	from := a.bucket(a.now) - ringN + 1
	for i := a.hist.base; i <= a.hist.last(); i++ {
		if a.bucket(a.hist.at(i).ev.At) >= from {
			return i
		}
	}
	return a.hist.last()
}

// rewindMove is the intent of , . home end: d events back (<0) or on; to the first or the last.
type rewindMove struct {
	d           int
	first, last bool
}

// rewindTo moves the cursor, entering rewind if the arena may be rewound: orders held, or a
// canned run finished.
func (m *model) rewindTo(in rewindMove) {
	a := m.ar
	switch {
	case a == nil:
		return
	case a.scenario != "" && !a.done:
		m.msg = "rewind: once the scenario has finished (, and . then walk through it)"
		return
	case a.scenario == "" && !m.paused:
		m.msg = "rewind: hold the orders first (space), then , and . walk back and forth through the timeline"
		return
	case len(a.hist.s) == 0:
		m.msg = "rewind: nothing has happened yet"
		return
	}
	lo, hi := a.firstDrawn(), a.hist.last()
	if a.rw == nil {
		a.rw = &rewind{at: hi, endB: a.bucket(a.now)}
		if in.first || (in.d > 0 && !in.last) {
			a.rw.at = lo
		}
		m.msg = ""
		return
	}
	to := a.rw.at + in.d
	switch {
	case in.first:
		to = lo
	case in.last:
		to = hi
	}
	switch {
	case to < lo:
		to, m.msg = lo, "rewind: this is the first event the timeline still shows"
	case to > hi:
		to, m.msg = hi, "rewind: this is the latest event"
	default:
		m.msg = ""
	}
	a.rw.at = to
}

// leaveRewind ends rewind; it tells whether there was one.
func (a *board) leaveRewind() bool {
	if a == nil || a.rw == nil {
		return false
	}
	a.rw = nil
	return true
}

// window is the timeline's right edge and the cursor's bucket (-1 without rewind): in rewind the
// view stays where it was when rewind began, and moves only to keep the cursor on screen.
func (a *board) window(cols int) (end, cur int64) {
	end, cur = a.bucket(a.now), -1
	if a.rw == nil {
		return end, cur
	}
	cur = a.bucket(a.hist.at(a.rw.at).ev.At)
	end = min(max(a.rw.endB, cur), end)
	if cur <= end-int64(cols) {
		end = cur + int64(cols)*3/4
	}
	return end, cur
}

var sCursor = lipgloss.NewStyle().Reverse(true)

// rewindLines say what happened at the cursor: where it is, when, and the event in words, on at
// most two lines.
func (a *board) rewindLines(w int) []string {
	if a.rw == nil {
		return nil
	}
	s := a.hist.at(a.rw.at)
	head := sLabel.Render(fmt.Sprintf("◀▶ %d/%d %.2fs", a.rw.at-a.hist.base+1, len(a.hist.s), s.ev.At.Seconds())) + " "
	if a.hist.base > 0 {
		head = sLabel.Render(fmt.Sprintf("◀▶ #%d %.2fs", a.rw.at+1, s.ev.At.Seconds())) + " "
	}
	l := wrap(head+a.said(a.rw.at), w)
	return clip(l, 2, w)
}

// said is event i in words (the referee's, as the log says them), with the lock as it stood after it
// where that is the news.
func (a *board) said(i int) string {
	s := a.hist.at(i)
	e := s.ev
	who := fmt.Sprintf("buyer %d", e.Buyer)
	on := a.onNode(e.Node)
	switch e.Kind {
	case referee.EvStart:
		return fmt.Sprintf("%s starts order %d", who, e.Order)
	case referee.EvCommand, referee.EvEnter:
		return e.Words() + "; " + a.lockAt(s)
	case referee.EvReleased, referee.EvExpired, referee.EvLost:
		return e.Words() + "; " + a.lockAt(s)
	case referee.EvAcquired:
		got := fmt.Sprintf("the lock%s is %s's, %s", on, who, a.freshTTL(i))
		if a.multi() {
			got += fmt.Sprintf("; %s holds %d of %d nodes", who, holds(s.nodes, e.Buyer), len(s.nodes))
			if s.owner == e.Buyer {
				got += ": a majority"
			}
		}
		if !e.Handed {
			if c := a.lockCommand(i); c != "" {
				return fmt.Sprintf("%s: %s → OK, %s", who, c, got)
			}
		}
		return e.Words() + ": " + got
	}
	return e.Words()
}

// lockAt is the lock after snap s, in words.
func (a *board) lockAt(s snap) string {
	switch {
	case a.noLock:
		return "this step takes no lock"
	case a.multi() && s.owner != 0:
		return fmt.Sprintf("buyer %d holds a majority (%d of %d nodes)", s.owner, holds(s.nodes, s.owner), len(s.nodes))
	case a.multi():
		return "nobody holds a majority"
	case s.owner != 0:
		return fmt.Sprintf("the lock is buyer %d's", s.owner)
	}
	return "the lock is free"
}

// lockCommand is the lock command whose answer event i is (see commandBefore).
func (a *board) lockCommand(i int) string {
	return a.commandBefore(i-1, a.hist.at(i).ev)
}

// commandBefore is the lock command whose answer e is, in words: e's buyer's latest command on the
// lock (on e's node) at or before event j, since its previous event about the lock; "" if none.
func (a *board) commandBefore(j int, e referee.Event) string {
	for stop := max(a.hist.base, j-64); j >= stop; j-- {
		p := a.hist.at(j).ev
		if p.Buyer != e.Buyer {
			continue
		}
		if p.Kind == referee.EvAcquired && p.Node != e.Node {
			continue // a quorum lock's answer on another node
		}
		if p.Kind != referee.EvCommand {
			return ""
		}
		if p.Cmd != nil && p.Cmd.OnLock && p.Cmd.Node == e.Node {
			return p.Cmd.Long
		}
	}
	return ""
}

// freshTTL is a lock's TTL when event i wrote it: none when SETNX (which cannot set one) wrote
// it, else the arena's.
func (a *board) freshTTL(i int) string {
	if a.hist.at(i).nodes[a.hist.at(i).ev.Node].noTTL {
		return "no TTL: held until deleted"
	}
	return fmt.Sprintf("TTL %.1fs", a.timing.TTL.Seconds())
}

// ttlLeft is the TTL a node's lock had left at time at, reckoned from its holder's last write.
func (a *board) ttlLeft(nv nodeView, at time.Duration) string {
	if nv.noTTL {
		return "no TTL: held until deleted"
	}
	left := a.timing.TTL - (at - nv.setAt)
	if left <= 0 {
		return "its TTL has run out (the referee sees it at the next command there)"
	}
	return fmt.Sprintf("TTL ≈%.2fs left", left.Seconds())
}

// lossAt is what lost a lock at event i: the restart or failover just before it.
func (a *board) lossAt(i int) string {
	for j := i - 1; j >= max(a.hist.base, i-64); j-- {
		switch a.hist.at(j).ev.Kind {
		case referee.EvRestart:
			return "restart"
		case referee.EvFailover:
			return "failover"
		}
	}
	return a.loss
}
