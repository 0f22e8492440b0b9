package tui

import (
	"fmt"
	"slices"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/referee"
)

// The lock's nodes as the events tell them: who holds the lock on each, since when, and what
// happened to the node. A one-node lock has one; a quorum lock (step 15) has one per node, and
// its owner is the buyer that holds a majority of them.

// nodeView is one lock node.
type nodeView struct {
	owner int           // the buyer whose lock the node holds, 0 if none
	setAt time.Duration // when its owner last wrote or renewed it there
	fate  string        // what happened to the node: "restarted", "failed over", or ""
	noTTL bool          // its lock was written by SETNX, which sets no TTL
}

// multi tells whether the lock lives on several nodes.
func (a *board) multi() bool { return len(a.nodes) > 1 }

// nodeName is how a sentence names node i (0-based): "lock-2", as the arena's nodes are named.
func nodeName(i int) string { return fmt.Sprintf("lock-%d", i+1) }

// onNode is " on lock-2" for a quorum lock, "" for a one-node lock.
func (a *board) onNode(i int) string {
	if !a.multi() {
		return ""
	}
	return " on " + nodeName(i)
}

// majority is the buyer that holds more than half of the nodes, 0 if none does.
func majority(nodes []nodeView) int {
	count := map[int]int{}
	for _, n := range nodes {
		if n.owner != 0 {
			count[n.owner]++
			if count[n.owner]*2 > len(nodes) {
				return n.owner
			}
		}
	}
	return 0
}

// holds is how many nodes buyer n holds.
func holds(nodes []nodeView, n int) int {
	k := 0
	for _, x := range nodes {
		if x.owner == n && n != 0 {
			k++
		}
	}
	return k
}

// node is the view of node i, growing the list if an event names a node it did not know.
func (a *board) node(i int) *nodeView {
	for len(a.nodes) <= i {
		a.nodes = append(a.nodes, nodeView{})
	}
	return &a.nodes[i]
}

// renewed notes a holder's command that rewrote or renewed its lock (a Lua script, a PEXPIRE) on
// the node it went to.
func (a *board) renewed(e referee.Event) {
	i := e.Node
	if e.Cmd != nil {
		i = e.Cmd.Node
	}
	if i >= 0 && i < len(a.nodes) && a.nodes[i].owner == e.Buyer {
		a.nodes[i].setAt = e.At
	}
}

// lockEvent says an event about the lock on one node in the log, and keeps what the node's
// lines say beside its holder (the fold's): when its holder last wrote it, and what happened to
// the node.
func (a *board) lockEvent(e referee.Event) {
	nv := a.node(e.Node)
	switch e.Kind {
	case referee.EvAcquired:
		nv.setAt = e.At
		nv.noTTL = e.TTL < 0
		if a.multi() {
			a.logf(e.At, "%s (%d of %d nodes)", e.Words(), a.pic.Holds(e.Buyer), len(a.nodes))
		} else {
			a.logf(e.At, "%s", e.Words())
		}
	case referee.EvLost:
		a.logf(e.At, "%s, in the %s", e.Words(), a.loss)
	case referee.EvFailover:
		if e.OK {
			a.failedOver, a.armed, a.loss, nv.fate = true, "", "failover", "failed over"
		}
		a.logf(e.At, "%s", e.Words())
	case referee.EvRestart:
		if e.OK {
			a.loss, nv.fate = "restart", "restarted"
		}
		a.logf(e.At, "%s", e.Words())
	default:
		a.logf(e.At, "%s", e.Words())
	}
}

// nodeLines are a quorum lock's nodes, one line each: who holds the lock there and its TTL, and
// what happened to the node. While a session runs they say the latest reading of every node; in
// rewind, and once a run is over, what the events tell (the TTL reckoned from the holder's last
// write, so marked ≈).
func (a *board) nodeLines(w int) []string {
	if !a.multi() {
		return nil
	}
	nodes, at := a.nodes, a.now
	if a.rw != nil {
		s := a.hist.at(a.rw.at)
		nodes, at = s.nodes, s.ev.At
	}
	live := a.rw == nil && !a.done && a.read && len(a.lk.nodes) == len(nodes)
	out := make([]string, 0, len(nodes))
	for i, nv := range nodes {
		var s string
		switch {
		case live:
			st := a.lk.nodes[i]
			s = "free"
			if st.Held {
				who := "held (its taker not seen yet)"
				if st.Owner != 0 {
					who = "buyer " + fmt.Sprint(st.Owner)
				}
				s = fmt.Sprintf("%s · TTL %.2fs left", who, st.TTL.Seconds())
			}
		case nv.owner != 0:
			s = fmt.Sprintf("buyer %d · %s", nv.owner, a.ttlLeft(nv, at))
		default:
			s = "free"
		}
		switch nv.fate {
		case "restarted":
			s += " · " + sWarn.Render("restarted without persistence: it forgot its keys")
		case "failed over":
			s += " · " + sWarn.Render("failed over: its replica, without the last lock write, is primary")
		}
		out = append(out, ansi.Truncate(fmt.Sprintf("  %s %s", sLabel.Render(nodeName(i)), s), w, "…"))
	}
	return out
}

// quorumLine is a quorum lock's LOCK line: who holds a majority, from the same source the node
// lines use.
func (a *board) quorumLine(w int) string {
	head := sLabel.Render("LOCK") + " "
	nodes := a.nodes
	if a.rw != nil {
		nodes = a.hist.at(a.rw.at).nodes
	} else if !a.done && a.read && len(a.lk.nodes) == len(nodes) {
		nodes = make([]nodeView, len(a.lk.nodes))
		for i, st := range a.lk.nodes {
			if st.Held {
				nodes[i].owner = st.Owner
			}
		}
	}
	s := "free on every node"
	if slices.ContainsFunc(nodes, func(n nodeView) bool { return n.owner != 0 }) {
		s = fmt.Sprintf("no majority: nobody holds %d of the %d nodes", len(nodes)/2+1, len(nodes))
	}
	if o := majority(nodes); o > 0 {
		s = fmt.Sprintf("owner buyer %d · a majority: %d of %d nodes", o, holds(nodes, o), len(nodes))
	}
	return ansi.Truncate(head+s+sDim.Render(" · key "+a.lockKey), w, "…")
}
