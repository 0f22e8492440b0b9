package arena

import "time"

// Arrivals in virtual time: goroutines runnable at one simulated instant run in the Go
// scheduler's order, so two commands that reach a server (a lock node or the inventory) at one
// instant reach it in an order nobody chose, and a verdict could move from one play to the next.
// In a bubble every command arrives on an instant of its own: the first grid line (arrivalGrid) a
// round trip after it left, plus its buyer's slot on that line × arrivalStep, plus a few
// nanoseconds that order its own process's commands arriving with it (trip). Whatever a command sets
// going at its instant (its record, the events the stage waits for) is done before the next
// instant comes. A buyer's slot is its number shuffled by the line (slotOf): the same on every
// play, and no buyer first at every line (by its number alone, the lower numbers won every tie,
// and 13's fifth live buyer starved under lost-reply).

// arrivalGrid is the grid commands arrive on in virtual time; arrivalStep is how far apart on it
// two buyers' arrivals are (and so how many of one process's commands can arrive in order at one
// grid line: one a nanosecond).
const (
	arrivalGrid = time.Microsecond
	arrivalStep = 10 * time.Nanosecond
)

// flight is a command of a process on its way out: when it left, the Lock or Unlock call that
// sent it (nil: another goroutine, a watchdog's tick or a subscription's read), and the grid line
// it arrives on once it knows (0: not yet).
type flight struct {
	left time.Duration
	call *call
	line time.Duration
}

// depart notes that a command of p leaves now, in call c (nil: none).
func (p *process) depart(c *call) *flight {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := &flight{left: p.a.Since(), call: c}
	p.flights = append(p.flights, f)
	return f
}

// land notes that f has arrived, or will not.
func (p *process) land(f *flight) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, g := range p.flights {
		if g == f {
			p.flights = append(p.flights[:i:i], p.flights[i+1:]...)
			return
		}
	}
}

// trip is how long f, a command of p leaving the process's network now, takes to arrive: one
// round trip, and in virtual time up to arrivalGrid more, to its own instant (see above). Of the
// commands of p that leave at one instant (goroutines that woke at it: a watchdog's tick and the
// order's Unlock, two requests' calls, or all held by a freeze), the calls' go first, the one of
// the call begun first first (each call of p begun before f's and not ended before now puts f two
// nanoseconds later), and another goroutine's a nanosecond after its call's, whichever the Go
// scheduler ran first; each command that left earlier and arrives on the same line puts them two
// nanoseconds later. Hazard: two other goroutines' commands (two watchdogs' ticks) that leave at
// one instant still arrive in the scheduler's order; every margin a scenario stages is far wider
// than arrivalGrid.
func (p *process) trip(f *flight) time.Duration {
	a := p.a
	if !a.virtual {
		return a.t.RTT
	}
	now := a.Since()
	line := (now + a.t.RTT + arrivalGrid - 1) / arrivalGrid * arrivalGrid
	p.mu.Lock()
	f.line = line
	ahead := 0
	for _, g := range p.flights {
		// one that left before f and arrives on f's line, or has yet to say where: it may
		if g != f && g.left < f.left && (g.line == 0 || g.line == line) {
			ahead++
		}
	}
	if f.call != nil {
		ahead += p.begunBefore(f.call, now)
	}
	p.mu.Unlock()
	sub := 2 * ahead
	if f.call == nil {
		sub++
	}
	return line + slotOf(p.n, line)*arrivalStep + time.Duration(min(sub, int(arrivalStep)-1)) - now
}

// slots is how many buyers' slots a grid line has.
const slots = int(arrivalGrid / arrivalStep)

// coprime are the multipliers that shuffle a line's slots: each is coprime to slots, so n → a·n +
// b (mod slots) gives every buyer (below slots) a slot of its own.
var coprime = []int{1, 3, 7, 9, 11, 13, 17, 19, 21, 23, 27, 29, 31, 33, 37, 39}

// slotOf is buyer n's slot on grid line line: a shuffle of the buyers' numbers drawn from the
// line, the same on every play.
func slotOf(n int, line time.Duration) time.Duration {
	x := uint64(line / arrivalGrid)
	x ^= x >> 33 // splitmix64's finisher: nearby lines, unrelated shuffles
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	a, b := coprime[x%uint64(len(coprime))], int((x>>8)%uint64(slots))
	return time.Duration((a*(n%slots) + b) % slots)
}

// begunBefore is how many calls of p begun before c (a lower id) are under way or ended at now:
// the same on every play, however the goroutines that make them are scheduled. p.mu is held.
func (p *process) begunBefore(c *call, now time.Duration) int {
	n := 0
	for d := range p.calls {
		if d.id < c.id {
			n++
		}
	}
	for _, e := range p.ended {
		if e.at == now && e.id < c.id {
			n++
		}
	}
	return n
}

// callEnd is when a call of a process ended: begunBefore keeps those of the present instant.
type callEnd struct {
	id int
	at time.Duration
}
