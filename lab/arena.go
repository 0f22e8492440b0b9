package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/sim"
	"github.com/lockstep-lab/lockstep/steps"
)

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
	seen                                       []steps.Kind // the kinds announced, in order
	first                                      string       // a finished run's headline
	log                                        []string
	noLock                                     bool          // the step takes no lock (step 1)
	ownerDoneAt                                time.Duration // when the owner's order ended (done or crashed), 0 while it runs
	now                                        time.Duration
	last                                       time.Duration // the latest event

	lk     lockReading // the latest reading of the lock (read tells whether there is one)
	read   bool
	roster roster // live buyers: who orders, who was retired

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
		viol: map[steps.Kind]string{}, roster: roster{retired: map[int]bool{}}}
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
	line := fmt.Sprintf("%6.2fs  ", at.Seconds()) + oneLine(fmt.Sprintf(format, args...))
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
	a.owner, a.ownerDoneAt = n, 0
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
		if e.Buyer == a.owner && a.ownerDoneAt == 0 {
			a.ownerDoneAt = max(e.At, 1)
		}
		switch d := e.Detail; {
		case strings.HasPrefix(d, "sold, but "):
			// the order wrote the stock, then its handler returned an error (an Unlock refused)
			a.logf(e.At, "buyer %d: sold; then %s", e.Buyer, strings.TrimPrefix(d, "sold, but "))
		case d != "ok" && !strings.Contains(d, "busy"):
			a.logf(e.At, "buyer %d: order failed: %s", e.Buyer, d)
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
		if e.Buyer == a.owner && a.ownerDoneAt == 0 {
			a.ownerDoneAt = max(e.At, 1)
		}
		a.logf(e.At, "buyer %d crashed", e.Buyer)
	case sim.EvReentry:
		a.logf(e.At, "buyer %d: nested lock failed: %s", e.Buyer, e.Detail)
	case sim.EvViolation:
		a.see(e.Viol, e.Detail)
		detail := e.Detail
		if e.Viol == steps.Oversold || e.Viol == steps.Flood {
			// their numbers move on: the SHOP line and INVARIANTS say them as they are now
			detail = map[steps.Kind]string{steps.Oversold: "more orders confirmed than units left the shelf (SHOP counts them)",
				steps.Flood: fmt.Sprintf("more than %d Redis commands per confirmed order", steps.FloodLimit)}[e.Viol]
		}
		if a.judged(e.Viol) {
			a.logf(e.At, "VIOLATION %s: %s", e.Viol, detail)
		} else {
			a.logf(e.At, "also seen (not judged by %s) %s: %s", a.scenario, e.Viol, detail)
		}
	}
}

// see records kind k, announced with sentence s (the first announcement of a kind is kept).
func (a *arena) see(k steps.Kind, s string) {
	if _, ok := a.viol[k]; ok {
		return
	}
	a.viol[k] = oneLine(s)
	a.seen = append(a.seen, k)
}

// finish takes a canned run's report: the referee's verdict replaces the live guesses.
func (a *arena) finish(rep *sim.Report, err error) {
	a.done, a.rep, a.err = true, rep, err
	a.now = a.last
	if rep == nil {
		return
	}
	a.initial, a.shelf, a.confirmed = rep.InitialStock, rep.FinalStock, rep.Confirmed
	a.viol, a.seen = map[steps.Kind]string{}, nil
	for _, f := range rep.Explain {
		a.see(f.Kind, f.Sentence)
	}
	a.first = ""
	if len(rep.Explain) > 0 {
		a.first = oneLine(rep.Headline())
	}
}
