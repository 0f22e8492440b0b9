package sim

import (
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// waits is what the referee knows of buyers waiting for the lock, from the Lock calls it saw pass:
// who was passed over while waiting (starved), and how long the lock sat free while someone
// waited for it (idle). A hold is an order's time from a Lock call that answered true to the
// return of its last Unlock (or its end).
//
// Idle is the gaps between a release and the next acquisition by a buyer that had been waiting
// inside Lock since before that release, as a share of the time from the first release to the
// last. A waiter asleep in a back-off makes those gaps long; a spinner or a woken subscriber makes
// them a round trip or two; a buyer refused at once never waits across a release, so a lock that
// does not wait is never idle.
type waits struct {
	calls        map[*call]*waiting // Lock calls under way
	held         int                // orders holding the lock now
	firstRelease time.Duration      // -1 before any
	lastRelease  time.Duration      // -1 before any
	idle         time.Duration
	starved      []Starve
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
	return waits{calls: map[*call]*waiting{}, firstRelease: -1, lastRelease: -1}
}

func (w *waits) began(c *call) {
	w.calls[c] = &waiting{starve: -1}
}

// acquired ends Lock call c, which got the lock: every buyer that asked before it and is still
// waiting has been passed over once more.
func (r *referee) acquired(a *Arena, c *call, first bool) {
	w := &r.waits
	now := a.Since()
	delete(w.calls, c)
	if !first {
		return
	}
	if w.held == 0 && w.lastRelease >= 0 && c.began < w.lastRelease {
		w.idle += now - w.lastRelease
	}
	w.held++
	for x, wt := range w.calls {
		if x.began >= c.began || x.p == c.p {
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

func (w *waits) released(now time.Duration) {
	if w.held > 0 {
		w.held--
	}
	if w.held > 0 {
		return
	}
	if w.firstRelease < 0 {
		w.firstRelease = now
	}
	w.lastRelease = now
}

// idleShare is the idle gaps' share of the time from the first release to the last.
func (w *waits) idleShare() float64 {
	if span := w.lastRelease - w.firstRelease; span > 0 {
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
