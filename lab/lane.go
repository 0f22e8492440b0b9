package main

import "github.com/lockstep-lab/lockstep/lab/picture"

// ringN is how many time buckets a lane remembers: the widest timeline the lab draws.
const ringN = 512

// logN is how many lines the event log keeps.
const logN = 64

// A lane's state in one time bucket, lowest priority first: a bucket shows the strongest state
// it saw.
const (
	stIdle uint8 = iota
	stWait
	stWork    // at work without a lock (a step that takes none): no critical section to be in
	stHold    // owns the lock, outside the critical section
	stInside  // inside the critical section
	stCut     // cut off from the lock server (a partition), not inside
	stCutIn   // inside, cut off from the lock server: its lock cannot tell it anything
	stOverlap // inside while another order is inside too
	stFrozen
	stCrashed
)

// tcell is one time bucket of one lane.
type tcell struct {
	b     int64         // the bucket this cell holds (a ring slot is reused)
	st    uint8         // strongest state seen in the bucket
	marks [3]picture.ID // command marks, in order (the most telling kept when more arrive)
	spins uint16        // lock attempts while waiting
	own   uint16        // lock lane: the owner (0 free)
}

// lane is one row of the timeline: a buyer, or the lock server (n == 0).
type lane struct {
	n       int
	painted int64 // the last bucket painted; -1 before the first
	ring    [ringN]tcell
	// the buyer's state now
	waiting, inside, overlap, holding, frozen, crashed, cut bool
	own                                                     int // lock lane: the owner now
	// the buyer's orders under way (a second request makes two): started and not returned,
	// waiting for the lock, inside
	under, waitO, inO map[int]bool
	work              map[int]bool // orders at work without a lock
}

func newLane(n int) *lane {
	return &lane{n: n, painted: -1, under: map[int]bool{}, waitO: map[int]bool{}, inO: map[int]bool{}, work: map[int]bool{}}
}

// order sets order k's state: waiting for the lock, inside, or neither (ended).
func (l *lane) order(k int, waiting, inside bool) {
	setIf(l.waitO, k, waiting)
	setIf(l.inO, k, inside)
	l.waiting, l.inside = len(l.waitO) > 0, len(l.inO) > 0
}

func setIf(m map[int]bool, k int, on bool) {
	if on {
		m[k] = true
	} else {
		delete(m, k)
	}
}

func (l *lane) state() uint8 {
	switch {
	case l.crashed:
		return stCrashed
	case l.frozen:
		return stFrozen
	case l.inside && l.overlap:
		return stOverlap
	case l.cut && l.inside:
		return stCutIn
	case l.cut:
		return stCut
	case l.inside:
		return stInside
	case l.holding:
		return stHold
	case len(l.work) > 0:
		return stWork
	case l.waiting:
		return stWait
	}
	return stIdle
}

// at paints the lane up to bucket b with its current state and returns b's cell, or nil if b has
// left the ring.
func (l *lane) at(b int64) *tcell {
	if b > l.painted {
		from := max(l.painted+1, b-ringN+1)
		st, own := l.state(), uint16(l.own)
		for x := from; x <= b; x++ {
			l.ring[x%ringN] = tcell{b: x, st: st, own: own}
		}
		l.painted = b
	}
	if b < 0 || b <= l.painted-ringN {
		return nil
	}
	c := &l.ring[b%ringN]
	if c.b != b {
		return nil
	}
	return c
}

// touch records the lane's (changed) state in bucket b.
func (l *lane) touch(b int64) {
	if c := l.at(b); c != nil {
		c.st = max(c.st, l.state())
		if l.own != 0 {
			c.own = uint16(l.own)
		}
	}
}

// mark records command mark m in bucket b. A bucket keeps up to three marks in order; the
// timeline spills them into the columns after it, so GET → work → SET → DEL stay separate.
func (l *lane) mark(b int64, m picture.ID) {
	c := l.at(b)
	if c == nil {
		return
	}
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

// unown repaints the lock lane as free from bucket from on: the lock expired in Redis before
// anyone noticed.
func (l *lane) unown(from, to int64) {
	for b := max(from, to-ringN+1, 0); b <= to; b++ {
		if c := l.at(b); c != nil {
			c.own = 0
		}
	}
}
