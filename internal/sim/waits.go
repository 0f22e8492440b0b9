package sim

import (
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// waits is what the referee knows of buyers waiting for the lock: who was passed over while
// waiting inside Lock (starved), from the Lock calls it saw pass, and how long the lock sat free
// while someone waited for it (idle), from the lock on the first node.
//
// Idle is read from the gaps from the moment the lock key vanished (released, expired, lost) to
// the moment one appeared again, those a buyer waited across (it was inside Lock since before the
// key vanished). Both ends are read by the watcher in the node's own order of commands. A gap is
// idle when it outlasted its allowance: the grace, or idleAllowanceX times what the idle probe
// needed to reach the node after the same release, whichever is longer (a loaded machine slows a
// prompt waiter; it does not make a sleeping one prompt). The run's idle share is the idle gaps'
// time, the longest one aside, as a share of the time from the first vanishing to the last. A
// waiter asleep in a back-off leaves gap after gap idle; a spinner or a woken subscriber ends them
// within a round trip or two, and a stall the probe did not share (one a run at most, in the
// calibration) is the one set aside; a buyer refused at once never waits across a release, so a
// lock that does not wait is never idle.
type waits struct {
	calls   map[*call]*waiting // Lock calls under way
	freedAt time.Duration      // when the lock key vanished; -1 while it exists
	first   time.Duration      // when it first vanished; -1 before
	last    time.Duration      // when it last vanished
	gaps    []gap
	probes  map[time.Duration]time.Duration // release time → the idle probe's delay after it
	kick    func(at time.Duration)          // starts the idle probe for a release; nil: none
	grace   time.Duration                   // a gap this short is a prompt waiter's time to notice and ask: not idle
	starved []Starve
}

// gap is a stretch the lock sat free while a buyer waited inside Lock.
type gap struct{ from, length time.Duration }

// waiting is a Lock call under way: how many acquisitions by later askers it has seen, and its
// entry in starved once it starves.
type waiting struct {
	passed int
	starve int // index in waits.starved, or -1
}

// Starve is a buyer that waited inside Lock while buyers that asked after it got the lock.
type Starve struct {
	Buyer  int           `json:"buyer"`
	Passed int           `json:"passed"` // acquisitions by later askers it saw while it waited
	At     time.Duration `json:"at_ns"`  // when it had seen StarveLimit of them
}

func newWaits() waits {
	return waits{calls: map[*call]*waiting{}, freedAt: -1, first: -1, probes: map[time.Duration]time.Duration{}}
}

func (w *waits) began(c *call) {
	w.calls[c] = &waiting{starve: -1}
}

// acquired ends Lock call c, which got the lock: if it is the order's first hold, every buyer
// that asked before it and is still waiting has been passed over once more.
func (r *referee) acquired(a *Arena, c *call, first bool) {
	w := &r.waits
	now := a.Since()
	delete(w.calls, c)
	if !first {
		return
	}
	for x, wt := range w.calls {
		if !x.before(c) || x.p == c.p {
			continue
		}
		wt.passed++
		switch {
		case wt.starve >= 0:
			w.starved[wt.starve].Passed = wt.passed
		case wt.passed == steps.StarveLimit:
			wt.starve = len(w.starved)
			s := Starve{Buyer: x.p.n, Passed: wt.passed, At: now}
			w.starved = append(w.starved, s)
			r.announce(a, steps.Starved, s.String())
		}
	}
}

func (w *waits) refused(c *call) {
	delete(w.calls, c)
}

// freed notes that the lock key vanished at now.
func (w *waits) freed(now time.Duration) {
	if w.freedAt >= 0 {
		return
	}
	w.freedAt = now
	if w.first < 0 {
		w.first = now
	}
	w.last = now
	if w.kick != nil {
		w.kick(now)
	}
}

// probed notes the idle probe's delay after the release at at.
func (w *waits) probed(at, d time.Duration) {
	w.probes[at] = d
}

// taken notes that a lock key appeared at now: the gap since it vanished was idle if a buyer had
// been waiting inside Lock since before it vanished.
func (w *waits) taken(now time.Duration) {
	if w.freedAt < 0 {
		return
	}
	for c := range w.calls {
		if c.began < w.freedAt {
			w.gaps = append(w.gaps, gap{from: w.freedAt, length: now - w.freedAt})
			break
		}
	}
	w.freedAt = -1
}

// idleShare is the idle gaps' time, the longest aside, as a share of the time from the first
// vanishing to the last.
func (w *waits) idleShare() float64 {
	span := w.last - w.first
	if span <= 0 {
		return 0
	}
	var sum, longest time.Duration
	for _, g := range w.gaps {
		if w.idle(g) {
			sum += g.length
			longest = max(longest, g.length)
		}
	}
	return float64(sum-longest) / float64(span)
}

// idle tells whether gap g outlasted its allowance.
func (w *waits) idle(g gap) bool {
	return g.length > max(w.grace, idleAllowanceX*w.probes[g.from])
}

// idleGaps counts the gaps a buyer waited across, and those of them that were idle.
func (w *waits) idleGaps() (idle, of int) {
	for _, g := range w.gaps {
		if w.idle(g) {
			idle++
		}
	}
	return idle, len(w.gaps)
}

func (s Starve) String() string {
	return fmt.Sprintf("buyer %d waited inside Lock while buyers that asked after it got the lock %d times", s.Buyer, s.Passed)
}

func idleSentence(share float64, idle, of int) string {
	return fmt.Sprintf("the lock sat free for %.0f%% of the time while buyers waited for it (after %d of %d releases, longer than a woken buyer needs): they were asleep when it was released", 100*share, idle, of)
}
