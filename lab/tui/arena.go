package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/picture"
	"github.com/lockstep-lab/lockstep/steps"
)

// arena is what the lab knows about one session, built from its events only.
type board struct {
	scenario steps.Scenario // "" for live buyers
	timing   history.Timing
	res      time.Duration // one timeline column
	lockKey  string
	canFail  bool // the lock server has a replica

	initial, shelf, confirmed, commands, drops int
	pic                                        *picture.Fold // the lanes, as the page draws them too
	lanes                                      []*lane       // buyer n at index n-1
	lock                                       *lane
	nodeLanes                                  []*lane         // a quorum lock's nodes, one lane each (nodes.go)
	owner                                      int             // the lock's owner: on a quorum, the buyer holding a majority
	nodes                                      []nodeView      // each lock node as the events tell it (nodes.go)
	overlapLogged                              map[[2]int]bool // pairs of buyers whose overlap the log has said
	armed                                      string          // what the topology says of a move armed by a key (Scenario.Armed), "" for none
	failedOver                                 bool
	viol                                       map[steps.Kind]string        // the referee's sentence for each kind it found
	violAt                                     map[steps.Kind]time.Duration // when it said it
	violWho                                    map[steps.Kind][]int         // the buyers it names
	seen                                       []steps.Kind                 // the kinds announced, in order
	first                                      string                       // a finished run's headline
	log                                        []string
	noLock                                     bool // the step takes no lock (step 1)
	now                                        time.Duration
	last                                       time.Duration // the latest event

	lk     lockReading // the latest reading of the lock (read tells whether there is one)
	read   bool
	roster roster // live buyers: who orders, who was retired

	hist      trail   // every event, with the picture after it (rewind.go)
	rw        *rewind // the rewind cursor, while the learner walks the timeline
	fenced    int     // writes the inventory refused for a stale fencing token
	published int     // messages a command published (a lock's wake-up)
	marks     uint64  // the marks the fold drew, a bit each (picture.ID): the legend names a rare one once drawn
	line      []int   // the buyers in the lock's line of waiters (step 14), first first
	fenceBy   string  // the latest of them in words
	loss      string  // what the last lock loss was: "failover" or "restart"

	zoomed int // the columns a finished scenario's lanes were last drawn to fit (zoom)

	// play is the play drawn, where the scenario plays several (unlock-race: one per gap of the
	// holder's Unlock), and plays how many it played, once it is done
	play, plays int

	// prog is the found program whose recorded run this is (lab -program, program.go); nil else
	prog *replay

	// a canned run's outcome
	done bool
	rep  *referee.Report
	err  error
}

// newArena is the picture of a session on a lock of nodes lock nodes (0 is one).
func newArena(sc steps.Scenario, t history.Timing, stock int, lockKey string, canFail bool, nodes int) *board {
	res := t.TTL / 20
	if res <= 0 {
		res = time.Millisecond
	}
	a := &board{scenario: sc, timing: t, res: res, lockKey: lockKey, canFail: canFail,
		initial: stock, shelf: stock, lock: &lane{n: picture.Owner}, overlapLogged: map[[2]int]bool{},
		viol: map[steps.Kind]string{}, violAt: map[steps.Kind]time.Duration{}, violWho: map[steps.Kind][]int{}, roster: roster{retired: map[int]bool{}},
		nodes: make([]nodeView, max(nodes, 1)), loss: "failover", pic: picture.NewFold(nodes, false)}
	if a.multi() {
		for i := range a.nodes {
			a.nodeLanes = append(a.nodeLanes, &lane{n: picture.Node(i)})
		}
	}
	return a
}

// takesNoLock says the step takes no lock (step 1): an order is at work from its start.
func (a *board) takesNoLock() {
	a.noLock = true
	a.pic = picture.NewFold(len(a.nodes), true)
}

func (a *board) bucket(d time.Duration) int64 { return int64(d / a.res) }

// fresh is an empty board for the same step, scenario and pace: a scenario's next play.
func (a *board) fresh() *board {
	b := newArena(a.scenario, a.timing, a.initial, a.lockKey, a.canFail, len(a.nodes))
	if a.noLock {
		b.takesNoLock()
	}
	return b
}

// zoom draws a finished scenario's lanes (or a drive session's, as it grows: drive.go sets zoomed
// back to 0) at the resolution that fits its whole run in cols columns: a short break is not five
// columns at the left of a fixed axis, nor a long one cut.
// Live buyers scroll instead; a run whose oldest events were dropped is left as it is drawn.
func (a *board) zoom(cols int) {
	if !a.done && a.scenario != drive.Scenario || a.scenario == "" || cols == a.zoomed || a.last <= 0 || a.hist.base > 0 {
		return
	}
	a.zoomed = cols
	a.res = max(a.last/time.Duration(max(cols-6, 4)), time.Millisecond) // room for marks spilling past the end
	if a.rw != nil {
		a.rw.endB = a.bucket(a.now)
	}
}

func (a *board) buyer(n int) *lane {
	for len(a.lanes) < n {
		a.lanes = append(a.lanes, &lane{n: len(a.lanes) + 1})
	}
	return a.lanes[n-1]
}

// advance moves the arena's clock to now (a live session's time, between events).
func (a *board) advance(now time.Duration) {
	if now > a.now {
		a.now = now
	}
	a.pic.Advance(now)
}

func (a *board) logf(at time.Duration, format string, args ...any) {
	line := fmt.Sprintf("%6.2fs  ", at.Seconds()) + oneLine(fmt.Sprintf(format, args...))
	if len(a.log) == logN {
		copy(a.log, a.log[1:])
		a.log = a.log[:logN-1]
	}
	a.log = append(a.log, line)
}

// apply folds one event into the picture, and keeps it for rewind.
func (a *board) apply(e referee.Event) {
	a.fold(e)
	a.hist.add(e, a)
}

// fold folds one event into the picture: the lanes (a.pic) and what the board says beside them.
func (a *board) fold(e referee.Event) {
	if e.At > a.last {
		a.last = e.At
	}
	a.advance(e.At)
	for _, d := range a.pic.Add(e) {
		a.marks |= 1 << d.ID
		if d.ID == picture.Renew || d.ID == picture.LockScript {
			a.renewed(e) // the owner was alive (a Lua lock that re-enters rewrote its lock too)
		}
	}
	if e.Buyer > 0 {
		a.buyer(e.Buyer)
	}
	switch e.Kind {
	case referee.EvCommand:
		a.commands++
	case referee.EvEnter:
		if a.initial < 0 { // a scenario's stock is known from its first read
			a.initial, a.shelf = e.Stock, e.Stock
		}
		if !e.Peek() {
			a.logf(e.At, "%s", e.Words())
		}
	case referee.EvLine:
		a.line = e.Line
		a.logf(e.At, "%s", e.Words())
	case referee.EvPublish:
		a.published++
		a.logf(e.At, "%s", e.Words())
	case referee.EvWrite:
		a.confirmed++
		a.shelf = e.Stock
		a.logf(e.At, "%s", e.Words())
	case referee.EvDone:
		// An order that sold and returned nothing is the news of its write; a refusal is the
		// news of the lane. The rest is said.
		if !(e.Err == "" && e.Sold) && !strings.Contains(e.Err, steps.ErrBusy.Error()) {
			a.logf(e.At, "%s", e.Words())
		}
	case referee.EvWaiting:
		// Live buyers wait all the time: only a scenario's waits are news, and a second
		// request's, which waits for its own process's lock.
		if e.Other == e.Buyer || a.scenario != "" {
			a.logf(e.At, "%s", e.Words())
		}
	case referee.EvOverlap:
		// The referee decides overlaps in the inventory's order, so this can come after both
		// orders' marks; the first is said by its VIOLATION line, each other pair once.
		pair := [2]int{min(e.Buyer, e.Other), max(e.Buyer, e.Other)}
		if _, told := a.viol[steps.Overlap]; told && !a.overlapLogged[pair] {
			a.logf(e.At, "%s", e.Words())
		}
		a.overlapLogged[pair] = true
	case referee.EvFenced:
		a.fenced++
		a.fenceBy = fmt.Sprintf("buyer %d's token %d < the highest seen", e.Buyer, e.Token)
		a.logf(e.At, "%s", e.Words())
	case referee.EvPartitioned, referee.EvHealed, referee.EvRejected, referee.EvFault, referee.EvFrozen, referee.EvThawed, referee.EvCrashed, referee.EvNested:
		a.logf(e.At, "%s", e.Words())
	case referee.EvAcquired, referee.EvReleased, referee.EvForeign, referee.EvExpired, referee.EvLost, referee.EvFailover, referee.EvRestart:
		a.lockEvent(e)
	case referee.EvReentry:
		if !e.OK {
			a.logf(e.At, "%s", e.Words())
		}
	case referee.EvViolation:
		a.see(e.Viol, e.Sentence, e.At, e.Buyer, e.Other)
		a.logf(e.At, "%s", e.Words()) // "also seen (not judged by …)" where the scenario does not judge it
	}
	for i := range a.nodes {
		a.nodes[i].owner = a.pic.Holder(i)
	}
	a.owner = a.pic.Owner()
	if a.scenario == "" && a.pic.Events()%1024 == 0 { // a live session keeps what its timeline can show
		a.pic.Forget(a.now - 2*ringN*a.res)
	}
}

// see records kind k, announced with sentence s naming buyers who (0: nobody), the first
// announcement of a kind kept.
func (a *board) see(k steps.Kind, s string, at time.Duration, who ...int) {
	if _, ok := a.viol[k]; ok {
		return
	}
	a.viol[k], a.violAt[k] = oneLine(s), at
	for _, n := range who {
		if n != 0 && !slices.Contains(a.violWho[k], n) {
			a.violWho[k] = append(a.violWho[k], n)
		}
	}
	a.seen = append(a.seen, k)
}

// finish takes a canned run's report: the referee's verdict replaces the live guesses.
func (a *board) finish(rep *referee.Report, err error) {
	a.done, a.rep, a.err = true, rep, err
	a.now = a.last
	if rep == nil {
		return
	}
	a.initial, a.shelf, a.confirmed = rep.InitialStock, rep.FinalStock, rep.Confirmed
	a.viol, a.violAt, a.violWho, a.seen = map[steps.Kind]string{}, map[steps.Kind]time.Duration{}, map[steps.Kind][]int{}, nil
	for _, f := range rep.Explain {
		a.see(f.Kind, f.Sentence, 0, f.Buyers...)
	}
	a.first = oneLine(headline(rep))
}

// drew tells whether the fold drew mark m in this session.
func (a *board) drew(m picture.ID) bool { return a.marks&(1<<m) != 0 }
