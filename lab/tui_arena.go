package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps"
)

// ringN is how many time buckets a lane remembers: the widest timeline the lab draws.
const ringN = 512

// logN is how many lines the event log keeps.
const logN = 64

// A lane's state in one time bucket, lowest priority first: a bucket shows the strongest state
// it saw.
const (
	stIdle uint8 = iota
	stWait
	stHold    // owns the lock, outside the critical section
	stInside  // inside the critical section
	stOverlap // inside while another buyer is inside too
	stFrozen
	stCrashed
)

// tcell is one time bucket of one lane.
type tcell struct {
	b     int64   // the bucket this cell holds (a ring slot is reused)
	st    uint8   // strongest state seen in the bucket
	marks [3]byte // command marks, in order (the most telling kept when more arrive)
	spins uint16  // lock attempts while waiting
	own   uint16  // lock lane: the owner (0 free)
}

// lane is one row of the timeline: a buyer, or the lock server (n == 0).
type lane struct {
	n       int
	painted int64 // the last bucket painted; -1 before the first
	ring    [ringN]tcell
	// the buyer's state now
	waiting, inside, overlap, holding, frozen, crashed bool
	own                                                int // lock lane: the owner now
}

func newLane(n int) *lane { return &lane{n: n, painted: -1} }

func (l *lane) state() uint8 {
	switch {
	case l.crashed:
		return stCrashed
	case l.frozen:
		return stFrozen
	case l.inside && l.overlap:
		return stOverlap
	case l.inside:
		return stInside
	case l.holding:
		return stHold
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

// markRank orders command marks: a full bucket keeps its most telling commands.
var markRank = map[byte]int{'P': 1, 'o': 2, 'G': 3, 'S': 4, 'L': 5, 'D': 6,
	// lock lane
	'x': 7, '?': 8, '!': 9, 'F': 10}

// mark records command mark m in bucket b. A bucket keeps up to three marks in order; the
// timeline spills them into the columns after it, so GET → work → SET → DEL stay separate.
func (l *lane) mark(b int64, m byte) {
	c := l.at(b)
	if c == nil {
		return
	}
	for i, x := range c.marks {
		switch {
		case x == 0:
			if i == 0 || c.marks[i-1] != m {
				c.marks[i] = m
			}
			return
		case i == len(c.marks)-1 && x != m && markRank[m] >= markRank[x]:
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

// arena is what the lab knows about one session, built from its events only.
type arena struct {
	scenario steps.Scenario // "" for live buyers
	timing   sim.Timing
	res      time.Duration // one timeline column
	lockKey  string
	canFail  bool // the lock server has a replica

	initial, shelf, confirmed, commands, drops int
	lanes                                      []*lane // buyer n at index n-1
	lock                                       *lane
	owner                                      int
	ownedAt                                    time.Duration // when the owner took or last renewed the lock
	inside                                     map[int]bool
	armed, failedOver                          bool
	viol                                       map[steps.Kind]string
	first                                      string // the first violation, in one sentence
	latest                                     string // the latest new kind, when it is not the first
	log                                        []string
	now                                        time.Duration
	last                                       time.Duration // the latest event

	// read from Redis on a tick
	lockHeld   bool
	lockVal    string
	lockTTL    time.Duration
	lockReadAt time.Duration // session time of the read

	// a canned run's outcome
	done bool
	rep  *sim.Report
	err  error
}

func newArena(sc steps.Scenario, t sim.Timing, stock int, lockKey string, canFail bool) *arena {
	res := t.TTL / 20
	if res <= 0 {
		res = time.Millisecond
	}
	return &arena{scenario: sc, timing: t, res: res, lockKey: lockKey, canFail: canFail,
		initial: stock, shelf: stock, lock: newLane(0), inside: map[int]bool{},
		viol: map[steps.Kind]string{}}
}

func (a *arena) bucket(d time.Duration) int64 { return int64(d / a.res) }

func (a *arena) buyer(n int) *lane {
	for len(a.lanes) < n {
		a.lanes = append(a.lanes, newLane(len(a.lanes)+1))
	}
	return a.lanes[n-1]
}

// advance moves the arena's clock to now (a live session's time, between events).
func (a *arena) advance(now time.Duration) {
	if now > a.now {
		a.now = now
	}
}

func (a *arena) logf(at time.Duration, format string, args ...any) {
	line := fmt.Sprintf("%6.2fs  ", at.Seconds()) + fmt.Sprintf(format, args...)
	if len(a.log) == logN {
		copy(a.log, a.log[1:])
		a.log = a.log[:logN-1]
	}
	a.log = append(a.log, line)
}

// setOverlap marks every buyer inside as overlapping while two or more are inside.
func (a *arena) setOverlap(b int64) {
	many := len(a.inside) >= 2
	for n := range a.inside {
		l := a.buyer(n)
		l.at(b)
		l.overlap = many
		l.touch(b)
	}
}

func (a *arena) setOwner(n int, b int64) {
	if a.owner != 0 {
		o := a.buyer(a.owner)
		o.at(b)
		o.holding = false
		o.touch(b)
	}
	a.owner = n
	a.lock.at(b)
	a.lock.own = n
	a.lock.touch(b)
	if n != 0 {
		o := a.buyer(n)
		o.at(b)
		o.holding = true
		o.touch(b)
	}
}

// apply folds one event into the picture.
func (a *arena) apply(e sim.Event) {
	if e.At > a.last {
		a.last = e.At
	}
	a.advance(e.At)
	b := a.bucket(e.At)
	var l *lane
	if e.Buyer > 0 {
		l = a.buyer(e.Buyer)
		l.at(b)
	}
	switch e.Kind {
	case sim.EvCommand:
		a.commands++
		d := e.Detail
		switch {
		case d == "GET stock":
			l.mark(b, 'G')
		case d == "SET stock":
			l.mark(b, 'S')
		case d == "GET lock":
			l.mark(b, 'o')
		case d == "DEL lock":
			l.mark(b, 'D')
		case strings.HasPrefix(d, "EVAL"):
			l.mark(b, 'L')
			if e.Buyer == a.owner {
				a.ownedAt = e.At // a Lua renewal or unlock: either way the owner was alive
			}
		case strings.HasPrefix(d, "PEXPIRE") || strings.HasPrefix(d, "EXPIRE"):
			l.mark(b, 'P')
			if e.Buyer == a.owner {
				a.ownedAt = e.At
			}
		case strings.HasPrefix(d, "SET NX") || strings.HasPrefix(d, "SETNX"):
			if c := l.at(b); c != nil && c.spins < 1<<15 {
				c.spins++
			}
		}
	case sim.EvStart:
		l.waiting = true
		l.touch(b)
	case sim.EvEnter:
		if a.initial < 0 { // a scenario's stock is known from its first read
			a.initial, a.shelf = e.Stock, e.Stock
		}
		l.waiting = false
		l.inside = true
		a.inside[e.Buyer] = true
		a.logf(e.At, "buyer %d is inside: read stock %d", e.Buyer, e.Stock)
		a.setOverlap(b)
	case sim.EvWrite:
		a.confirmed++
		a.shelf = e.Stock
		a.logf(e.At, "buyer %d wrote stock %d: order confirmed", e.Buyer, e.Stock)
	case sim.EvExit:
		l.inside, l.overlap = false, false
		delete(a.inside, e.Buyer)
		l.touch(b)
		a.setOverlap(b)
	case sim.EvDone:
		l.waiting = false
		l.touch(b)
		if e.Detail != "ok" && !strings.Contains(e.Detail, "busy") {
			a.logf(e.At, "buyer %d: order failed: %s", e.Buyer, e.Detail)
		}
	case sim.EvWaiting:
		if a.scenario != "" { // live buyers wait all the time: only a scenario's waits are news
			a.logf(e.At, "buyer %d found the lock held by buyer %d", e.Buyer, e.Other)
		}
	case sim.EvRejected:
		a.logf(e.At, "buyer %d turned away, %d on the shelf", e.Buyer, e.Stock)
	case sim.EvAcquired:
		a.setOwner(e.Buyer, b)
		a.ownedAt = e.At
		a.logf(e.At, "buyer %d took the lock", e.Buyer)
	case sim.EvReleased:
		a.setOwner(0, b)
		a.logf(e.At, "buyer %d released its lock", e.Buyer)
	case sim.EvForeign:
		a.setOwner(0, b)
		a.lock.mark(b, '!')
		if e.Other != 0 {
			a.logf(e.At, "buyer %d DELETED buyer %d's lock", e.Buyer, e.Other)
		} else {
			a.logf(e.At, "buyer %d deleted a lock it did not own", e.Buyer)
		}
	case sim.EvExpired:
		// The referee sees an expiry at the next lock command; Redis dropped the key one TTL
		// after the owner last set it, so that is where the lock lane shows it.
		at := b
		if x := a.bucket(a.ownedAt + a.timing.TTL); a.ownedAt > 0 && x < b {
			at = x
		}
		a.setOwner(0, b)
		a.lock.unown(at, b)
		a.lock.mark(at, 'x')
		a.logf(e.At, "buyer %d's lock expired (TTL ran out)", e.Other)
	case sim.EvLost:
		a.setOwner(0, b)
		a.lock.mark(b, '?')
		a.logf(e.At, "buyer %d's lock vanished in the failover", e.Other)
	case sim.EvFailover:
		a.lock.mark(b, 'F')
		if !strings.HasPrefix(e.Detail, "failed") {
			a.failedOver, a.armed = true, false
		}
		a.logf(e.At, "failover: %s", e.Detail)
	case sim.EvFault:
		a.logf(e.At, "buyer %d hit: %s", e.Buyer, e.Detail)
	case sim.EvFrozen:
		l.frozen = true
		l.touch(b)
		a.logf(e.At, "buyer %d frozen for %s", e.Buyer, e.Detail)
	case sim.EvThawed:
		l.frozen = false
		l.touch(b)
		a.logf(e.At, "buyer %d runs again", e.Buyer)
	case sim.EvCrashed:
		l.crashed, l.frozen, l.waiting, l.holding = true, false, false, false
		l.touch(b)
		a.logf(e.At, "buyer %d crashed", e.Buyer)
	case sim.EvReentry:
		a.logf(e.At, "buyer %d: nested lock failed: %s", e.Buyer, e.Detail)
	case sim.EvViolation:
		if _, ok := a.viol[e.Viol]; !ok {
			a.viol[e.Viol] = e.Detail
			if a.first == "" {
				a.first = e.Detail
			} else {
				a.latest = string(e.Viol) + ": " + e.Detail
			}
		}
		a.logf(e.At, "VIOLATION %s: %s", e.Viol, e.Detail)
	}
}

// finish takes a canned run's report: the referee's verdict replaces the live guesses.
func (a *arena) finish(rep *sim.Report, err error) {
	a.done, a.rep, a.err = true, rep, err
	a.now = a.last
	if rep == nil {
		return
	}
	a.initial, a.shelf, a.confirmed = rep.InitialStock, rep.FinalStock, rep.Confirmed
	a.viol = map[steps.Kind]string{}
	for _, f := range rep.Explain {
		a.viol[f.Kind] = f.Sentence
	}
	a.first, a.latest = "", ""
	if len(rep.Explain) > 0 {
		a.first = rep.Headline()
	}
}

// oversold is the units sold that never left the shelf.
func (a *arena) oversold() int {
	if a.initial < 0 {
		return 0
	}
	return max(0, a.confirmed-(a.initial-a.shelf))
}

// perOrder is Redis commands per confirmed order.
func (a *arena) perOrder() float64 { return float64(a.commands) / float64(max(a.confirmed, 1)) }

// judged tells whether kind k counts in this session: a scenario judges only its own kinds.
func (a *arena) judged(k steps.Kind) bool {
	if a.scenario == "" {
		return true
	}
	for _, j := range steps.Judges[a.scenario] {
		if j == k {
			return true
		}
	}
	return false
}

// violated tells whether kind k was seen (flood is computed, stuck is only known at the end).
func (a *arena) violated(k steps.Kind) (string, bool) {
	if s, ok := a.viol[k]; ok {
		return s, true
	}
	if k == steps.Flood && !a.done && a.confirmed > 0 && a.perOrder() > steps.FloodLimit {
		return fmt.Sprintf("%.0f Redis commands per confirmed order (limit %d)", a.perOrder(), steps.FloodLimit), true
	}
	return "", false
}
