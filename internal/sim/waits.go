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
// Idle is the gaps from the moment the lock key vanished (released, expired, lost) to the moment
// one appeared again, counted when a buyer had been waiting inside Lock since before it vanished,
// as a share of the time from the first vanishing to the last. Both ends are read by the watcher
// in the node's own order of commands. A waiter asleep in a back-off makes those gaps long; a
// spinner or a woken subscriber makes them a round trip or two; a buyer refused at once never
// waits across a release, so a lock that does not wait is never idle.
type waits struct {
	calls     map[*call]*waiting // Lock calls under way
	freedAt   time.Duration      // when the lock key vanished; -1 while it exists
	firstFree time.Duration      // -1 before any
	lastFree  time.Duration
	idle      time.Duration
	grace     time.Duration // the part of each gap a prompt waiter needs to notice and ask
	starved   []Starve
}

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
	return waits{calls: map[*call]*waiting{}, freedAt: -1, firstFree: -1}
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
	if w.firstFree < 0 {
		w.firstFree = now
	}
	w.lastFree = now
}

// taken notes that a lock key appeared at now: the gap since it vanished was idle if a buyer had
// been waiting inside Lock since before it vanished.
func (w *waits) taken(now time.Duration) {
	if w.freedAt < 0 {
		return
	}
	for c := range w.calls {
		if c.began < w.freedAt {
			w.idle += max(0, now-w.freedAt-w.grace)
			break
		}
	}
	w.freedAt = -1
}

// idleShare is the idle gaps' share of the time from the first vanishing to the last.
func (w *waits) idleShare() float64 {
	if span := w.lastFree - w.firstFree; span > 0 {
		return float64(w.idle) / float64(span)
	}
	return 0
}

func (s Starve) String() string {
	return fmt.Sprintf("buyer %d waited inside Lock while buyers that asked after it got the lock %d times", s.Buyer, s.Passed)
}

func idleSentence(share float64) string {
	return fmt.Sprintf("the lock sat free for %.0f%% of the time while buyers waited for it: they were asleep when it was released", 100*share)
}
