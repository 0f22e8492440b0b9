package sim

import (
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// referee sees every event of an arena and judges the invariants. Its methods run with the
// arena's mu held. Hazard: it judges what happened, not what a step meant; a check it does not make
// is a violation it cannot see, which is why its own tests plant each kind.
type referee struct {
	owner      int // buyer whose command created the lock key, 0 if none
	initial    int
	shelf      int // the stock as last written
	confirmed  int
	commands   int
	failedOver bool

	inside   map[int]time.Duration // buyer → when it entered
	enters   map[int]int           // buyer → the order number it last entered in
	waits    map[int]int           // buyer → the order number it last found the lock taken in
	open     map[[2]int]time.Duration
	overlaps []Overlap
	foreign  []Foreign
	lost     []Rejection
	reentry  []Reentry
	told     map[steps.Kind]bool // kinds already announced live
}

func newReferee(stock int) referee {
	return referee{
		initial: stock, shelf: stock,
		inside: map[int]time.Duration{}, enters: map[int]int{}, waits: map[int]int{},
		open: map[[2]int]time.Duration{}, told: map[steps.Kind]bool{},
	}
}

// Overlap is a time two buyers were inside the critical section together.
type Overlap struct {
	A    int           `json:"a"`
	B    int           `json:"b"`
	From time.Duration `json:"from_ns"` // since the arena started
	To   time.Duration `json:"to_ns"`
}

// Foreign is a lock deleted by a process that did not own it.
type Foreign struct {
	By    int           `json:"by"`
	Owner int           `json:"owner"` // 0 if the referee did not see who created the lock
	At    time.Duration `json:"at_ns"`
}

// Rejection is a buyer turned away while units remained.
type Rejection struct {
	Buyer int           `json:"buyer"`
	Stock int           `json:"stock"` // units on the shelf when it was turned away
	At    time.Duration `json:"at_ns"`
}

// Reentry is a nested acquire that failed.
type Reentry struct {
	Buyer int           `json:"buyer"`
	Why   string        `json:"why"`
	At    time.Duration `json:"at_ns"`
}

func (r *referee) announce(a *Arena, k steps.Kind, sentence string) {
	if r.told[k] {
		return
	}
	r.told[k] = true
	a.emit(Event{Kind: EvViolation, Viol: k, Detail: sentence})
}

func (r *referee) firstInside() int {
	first, at := 0, time.Duration(1<<62)
	for n, t := range r.inside {
		if t < at || (t == at && n < first) {
			first, at = n, t
		}
	}
	return first
}

func (r *referee) entered(n, order int) bool { return r.enters[n] == order && order > 0 }

func (r *referee) enter(a *Arena, n, stock int) {
	now := a.Since()
	r.enters[n] = a.procs[n-1].order
	for m := range r.inside {
		if m != n {
			r.open[pair(m, n)] = now
		}
	}
	r.inside[n] = now
	a.emit(Event{Kind: EvEnter, Buyer: n, Stock: stock})
}

func (r *referee) write(a *Arena, n, stock int) {
	r.confirmed++
	r.shelf = stock
	a.emit(Event{Kind: EvWrite, Buyer: n, Stock: stock})
	if over := r.confirmed - (r.initial - r.shelf); over > 0 {
		r.announce(a, steps.Oversold, oversoldSentence(r.confirmed, r.initial-r.shelf))
	}
	r.exit(a, n)
}

func (r *referee) exit(a *Arena, n int) {
	if _, ok := r.inside[n]; !ok {
		return
	}
	now := a.Since()
	delete(r.inside, n)
	for k, from := range r.open {
		if k[0] == n || k[1] == n {
			delete(r.open, k)
			o := Overlap{A: k[0], B: k[1], From: from, To: now}
			r.overlaps = append(r.overlaps, o)
			r.announce(a, steps.Overlap, o.String())
		}
	}
	a.emit(Event{Kind: EvExit, Buyer: n})
}

func (r *referee) foreignRelease(a *Arena, by int) {
	f := Foreign{By: by, Owner: r.owner, At: a.Since()}
	r.owner = 0
	r.foreign = append(r.foreign, f)
	a.emit(Event{Kind: EvForeign, Buyer: by, Other: f.Owner})
	r.announce(a, steps.ForeignRelease, f.String())
}

func (r *referee) rejected(a *Arena, n int) {
	if r.shelf <= 0 {
		return
	}
	j := Rejection{Buyer: n, Stock: r.shelf, At: a.Since()}
	r.lost = append(r.lost, j)
	a.emit(Event{Kind: EvRejected, Buyer: n, Stock: r.shelf})
	r.announce(a, steps.LostSales, j.String())
}

func (r *referee) reentryFailed(a *Arena, n int, why string) {
	e := Reentry{Buyer: n, Why: why, At: a.Since()}
	r.reentry = append(r.reentry, e)
	a.emit(Event{Kind: EvReentry, Buyer: n, Detail: why})
	r.announce(a, steps.ReentryFailed, e.String())
}

func pair(a, b int) [2]int {
	if a > b {
		a, b = b, a
	}
	return [2]int{a, b}
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func (o Overlap) String() string {
	return fmt.Sprintf("buyer %d and buyer %d were both inside the critical section for %s", o.A, o.B, ms(o.To-o.From))
}

func (f Foreign) String() string {
	if f.Owner == 0 {
		return fmt.Sprintf("buyer %d deleted a lock it did not own", f.By)
	}
	return fmt.Sprintf("buyer %d deleted the lock that buyer %d held", f.By, f.Owner)
}

func (j Rejection) String() string {
	return fmt.Sprintf("buyer %d was turned away while %s on the shelf", j.Buyer, units(j.Stock))
}

func (e Reentry) String() string {
	return fmt.Sprintf("buyer %d could not re-enter the lock it held: %s", e.Buyer, e.Why)
}

// units says "1 unit was" / "3 units were".
func units(n int) string {
	if n == 1 {
		return "1 unit was"
	}
	return fmt.Sprintf("%d units were", n)
}

func oversoldSentence(confirmed, left int) string {
	verb := "units left"
	if left == 1 {
		verb = "unit left"
	}
	return fmt.Sprintf("%d orders confirmed but only %d %s the shelf: %d oversold", confirmed, left, verb, confirmed-left)
}
