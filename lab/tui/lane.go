package tui

import (
	"time"

	"github.com/lockstep-lab/lockstep/lab/picture"
)

// ringN is how many time buckets the timeline draws at most: its widest, and what a live session
// keeps of its past (board.forget).
const ringN = 512

// logN is how many lines the event log keeps.
const logN = 64

// A lane's state in one time bucket, lowest priority first: a bucket shows the strongest state
// it saw (picture.StateOf).
const (
	stIdle    = picture.Idle
	stWait    = picture.Waits
	stWork    = picture.Works
	stHold    = picture.Holds
	stInside  = picture.In
	stCut     = picture.CutOff
	stCutIn   = picture.CutIn
	stOverlap = picture.Overlaps
	stFrozen  = picture.IsFrozen
	stCrashed = picture.IsCrashed
)

// lane is one row of the timeline: buyer n (n ≥ 1), the lock (picture.Owner), or a quorum's
// node (picture.Node(i)). What it shows is the board's fold's (picture.Fold).
type lane struct{ n int }

// tcell is one time bucket of one lane, as the fold draws it.
type tcell struct {
	st    picture.State
	flags picture.Flags
	marks [3]picture.ID // command marks, in order (the most telling kept when more arrive)
	tries int           // lock attempts (the terminal draws a waiter's as ~)
	own   int           // the lock's and a node's lane: its holder (0 free)
}

// mark records command mark m in the cell. A bucket keeps up to three marks in order; the
// timeline spills them into the columns after it, so GET → work → SET → DEL stay separate.
func (c *tcell) mark(m picture.ID) {
	for i, x := range c.marks {
		switch {
		case x == picture.None:
			if i == 0 || c.marks[i-1] != m {
				c.marks[i] = m
			}
			return
		case i == len(c.marks)-1 && x != m && picture.Marks[m].Rank >= picture.Marks[x].Rank:
			c.marks[i] = m
		}
	}
}

// buckets are lanes' cells for the buckets from on, to now: what one View draws.
type buckets struct {
	from, to int64
	lanes    [][]tcell // the Owner's lane at 0, buyer n's at n
	nodes    [][]tcell // node i's at i
}

// cells is lane l's cells (nil: a lane the board does not draw).
func (bs *buckets) cells(l int) []tcell {
	if i, ok := picture.NodeOf(l); ok {
		if i < len(bs.nodes) {
			return bs.nodes[i]
		}
		return nil
	}
	if l >= 0 && l < len(bs.lanes) {
		return bs.lanes[l]
	}
	return nil
}

// at is lane l's cell of bucket b, nil outside the buckets.
func (bs *buckets) at(l int, b int64) *tcell {
	c := bs.cells(l)
	if b < bs.from || b > bs.to || c == nil {
		return nil
	}
	return &c[b-bs.from]
}

// draw lays the board's fold into buckets from..to: each lane's stretches as the strongest
// state each bucket saw, its marks, tries and holder. A quorum's marks are drawn on its nodes'
// lanes, a one-node lock's on the lock's.
func (a *board) draw(from, to int64) *buckets {
	n := int(to - from + 1)
	bs := &buckets{from: from, to: to, lanes: make([][]tcell, len(a.lanes)+1), nodes: make([][]tcell, len(a.nodeLanes))}
	for i := range bs.lanes {
		bs.lanes[i] = make([]tcell, n)
	}
	for i := range bs.nodes {
		bs.nodes[i] = make([]tcell, n)
	}
	lane := func(l int) []tcell {
		if !a.multi() && l == picture.Node(0) {
			return bs.lanes[picture.Owner] // a one-node lock: its lane is the Owner's
		}
		return bs.cells(l)
	}
	t0 := time.Duration(from) * a.res
	a.pic.EachSpan(t0, func(s picture.Span) {
		c := lane(s.Lane)
		if c == nil || (!a.multi() && s.Lane == picture.Node(0)) {
			return // a one-node lock's holds are the Owner's
		}
		lo, hi := max(a.bucket(s.From), from), min(a.bucket(s.To), to)
		for b := lo; b <= hi; b++ {
			x := &c[b-from]
			if s.Kind == picture.Held {
				x.own = s.Holder
			} else {
				x.flags |= 1 << s.Kind
			}
		}
	})
	for _, d := range a.pic.Marks(t0, time.Duration(to+1)*a.res-1) {
		c := lane(d.Lane)
		if c == nil {
			continue
		}
		x := &c[a.bucket(d.At)-from]
		switch {
		case d.ID == picture.Try:
			x.tries++
		case d.ID.OnTerminal():
			x.mark(d.ID)
		}
	}
	for _, c := range append(bs.lanes, bs.nodes...) {
		for i := range c {
			c[i].st = picture.StateOf(c[i].flags)
		}
	}
	return bs
}
