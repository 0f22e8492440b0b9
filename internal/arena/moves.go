package arena

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
)

// The moves: each fault the lab can stage, once. A move strikes at a point defined by what a
// process did (observed at the servers, never by the lock's shape), says what it does as it
// strikes (the fault record's words, which the log, rewind and pages show), and, when it lasts,
// lasts until its counterpart has acted — another buyer has got in, or, a TTL on, found the lock
// taken, been refused or finished an order (Stage.Met) — at most its cap, then one Work more (a beat), so the overlap it was staged for
// is wide enough to see. A scripted scenario arms them on its buyers (internal/scenario); the
// terminal lab's keys arm the same moves on a live session's holder, so a key does what its
// scenario does. A move that found nowhere to strike says why at the end (Stage.Unmet): no
// verdict, or, where the order takes no lock, a note.
//
// Hazard: a move that lasts is bounded by its cap, not by its counterpart: a lock that keeps
// every other buyer waiting (a watchdog renewing) holds the fault for the whole cap.
//
// Each fault is one file, fault_<name>.go: its name (a Fault… constant), its Move (the value every
// list of faults derives from), its arming method and its strike, the words it says as it
// strikes, and why it did not strike. This file is what they share.

// A Move is one fault the arena stages, as a Scenario is one attack: its name, its words, where
// it strikes, what it needs of a backend and how to arm it. Moves is every one; the explorer's
// fault lists derive from it. Hazard: Moves' order is the explorer's: a seed draws its mix from
// it, so a move ranked anywhere but last changes every seed's programs.
type Move struct {
	Fault history.Fault
	// Rank is its place in Moves, from 1.
	Rank int
	// What is what it does, in one line.
	What string
	// On says where it strikes: a buyer's order, a lock node, or the buyer as it comes on the
	// stage (a BuyerOption: Arm nil).
	On Target
	// Last: an order it is armed on must be its buyer's last (a crash ends the process, a second
	// request adds an order of its own).
	Last bool
	// Explored: lab explore places it in its programs.
	Explored bool
	// Scenario is the matrix's scenario that stages it, as a grade's row shows it.
	Scenario steps.Scenario
	// Needs says why env cannot stage it (nil: it can, or it needs nothing).
	Needs func(env redisenv.Env) error
	// Arm arms it on buyer b, for b's order under way or its next (gap: the Unlock command an
	// unlock-race freezes before); nil for a move set up as the buyer comes on the stage. Its
	// error is Needs' answer.
	Arm func(s *Stage, b *Actor, gap int) error
	// Now, when set, strikes it on b at once, wherever b is: what a key does to a holder that
	// may be past the moment Arm waits for (a crash: the holder may have left its work).
	Now func(s *Stage, b *Actor)
}

// A Target is where a move strikes.
type Target int

// The targets.
const (
	OnOrder Target = iota // the buyer's process, in an order
	OnNode                // a lock node, after the buyer's Lock
	OnBuyer               // the buyer, from the moment it comes on the stage
)

var moves []*Move

// addMove registers m in Moves, at its Rank.
func addMove(m *Move) *Move {
	moves = append(moves, m)
	slices.SortFunc(moves, func(a, b *Move) int { return a.Rank - b.Rank })
	return m
}

// Moves is every fault the arena stages, in Rank order.
func Moves() []*Move { return slices.Clone(moves) }

// MoveOf is the move named f, nil if none is.
func MoveOf(f history.Fault) *Move {
	for _, m := range moves {
		if m.Fault == f {
			return m
		}
	}
	return nil
}

// counterpart says in words what a lasting move waits for.
const counterpart = "until another buyer has got in (or, a TTL on, still finds the lock taken)"

// The caps, in TTLs: how long a lasting move waits for its counterpart at most.
const (
	capWork   = 6 // slow work, a pause, a partition
	capUnlock = 4 // a freeze before an unlock command
)

// move is one fault a stage armed: whether it struck, and what to say after the play if not.
type move struct {
	a      *Arena
	f      history.Fault
	struck bool          // guarded by a.mu
	done   chan struct{} // closed as it strikes
	unmet  func()
}

// Struck closes once the move has struck.
func (m *move) Struck() Wait { return m.done }

// newMove arms fault f on the stage; unmet says, after the play, why it did not strike.
func (s *Stage) newMove(f history.Fault, unmet func(m *move)) *move {
	m := &move{a: s.a, f: f, done: make(chan struct{})}
	m.unmet = func() {
		s.a.mu.Lock()
		struck := m.struck
		s.a.mu.Unlock()
		if !struck && unmet != nil {
			unmet(m)
		}
	}
	s.mu.Lock()
	s.moves = append(s.moves, m)
	s.mu.Unlock()
	return m
}

// strike marks m struck and records it, on buyer n, in words; it reports false if m had struck
// already.
func (m *move) strike(n int, says string, cmds []history.Cmd, node int) bool {
	a := m.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if m.struck {
		return false
	}
	m.struck = true
	close(m.done)
	a.record(history.Record{Kind: history.RecFault, What: string(m.f), Buyer: n, Says: says, Cmds: cmds, Node: node})
	return true
}

// hit marks m struck without a record: a move that strikes again and again, and whose every
// strike the history shows otherwise (the greedy head start: each release, then its retry).
func (m *move) hit() {
	a := m.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if !m.struck {
		m.struck = true
		close(m.done)
	}
}

// armedFault is a move waiting in a process for its moment (at): in the shop's work, or as its
// stock write leaves. do is its strike, once its record is written; until makes, as it strikes,
// what it lasts until (nil: its cap alone).
type armedFault struct {
	m     *move
	at    moment
	says  string
	do    func(w *work, x *armedFault) error
	until func() Wait
	cap   time.Duration
}

// A moment is where in an order an armed fault strikes.
type moment int

const (
	inWork  moment = iota // in Shop.Work (at once if the order is at work)
	atWrite               // as the stock write leaves
)

// where names the moment in the Shop's words, for a move that never struck.
func (at moment) where() string {
	if at == atWrite {
		return "Shop.SetStock, Shop.SetStockFenced or Shop.Sell"
	}
	return "Shop.Work"
}

// arm sets fault f on b's process, to strike at its moment with do, saying says; a cap > 0 makes
// it last until its counterpart has acted, at most cap. It wakes the work if it is in it.
func (b *Actor) arm(f history.Fault, at moment, cap time.Duration, says string, do func(w *work, x *armedFault) error) {
	s := b.s
	x := &armedFault{at: at, says: says, do: do, cap: cap}
	if cap > 0 {
		x.until = func() Wait { return s.Met(b) }
	}
	x.m = s.newMove(f, func(m *move) {
		s.a.nowhere("the %s fault never struck: buyer %d's order never called %s, where it strikes", f, b.N, at.where())
	})
	b.p.arm(x)
}

// lasting says in words how long a lasting move of cap lasts.
func (a *Arena) lasting(cap time.Duration) string {
	return fmt.Sprintf("%s, at most %s", counterpart, cap)
}

// orderUnder closes when the buyer's k-th order is under way past its lock: inside, at its work
// (an order that takes no lock works first), or done.
func (b *Actor) orderUnder(k int) Wait {
	return b.s.sig.get(sigKey{buyer: b.N, order: k, kind: sigUnder})
}

// stayInside keeps the buyer's k-th order inside after its work until w (at most 2 × TTL): at
// once if that order is under way, else when it starts.
func (b *Actor) stayInside(k int, w Wait) {
	b.s.a.mu.Lock()
	defer b.s.a.mu.Unlock()
	b.p.holds = append(b.p.holds, stay{k: k, w: w})
	for _, o := range b.p.current {
		if o.k == k {
			o.hold = w
		}
	}
}

// stay is a hold waiting for a process's k-th order.
type stay struct {
	k int
	w Wait
}

// nodeMoveUnmet says why a node move armed for b did not strike.
func (s *Stage) nodeMoveUnmet(b *Actor, what string, e *nodeEye) {
	if b == nil {
		return
	}
	if s.a.lockCalls(b.p) == 0 {
		s.a.note("the %s had no lock to strike: buyer %d's order takes none", what, b.N)
		return
	}
	s.a.nowhere("the %s found no lock to strike: buyer %d's Lock never returned holding a key it wrote on %s", what, b.N, e.node.Name())
}

// current is the number of the buyer's order under way (its latest), or of its next.
func (b *Actor) current() int {
	b.s.a.mu.Lock()
	defer b.s.a.mu.Unlock()
	if n := len(b.p.current); n > 0 {
		return b.p.current[n-1].k
	}
	return b.p.orders + 1
}

// armed is a node move waiting for a holder's Lock: on node, after a Lock of buyer (nil: anyone)
// that returns holding a lock written there — or, with afterHeld, that returns at all after the
// node held back its lock write from the replica (a lock that waited for a replica's
// acknowledgement, had none, and refused).
type armed struct {
	node      int
	buyer     *Actor
	m         *move
	strike    func(holder *Actor) // what it does, the caller holding nothing
	afterHeld bool
}

// armNode arms x for the next Lock it waits for.
func (s *Stage) armNode(x *armed) {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	s.a.armed = append(s.a.armed, armedOn{x: x, s: s})
}

// armedOn is a node move with its stage.
type armedOn struct {
	x *armed
	s *Stage
}

// afterLock is told of every Lock call that returned: an armed node move whose moment it is
// strikes now, before the call's caller goes on.
func (a *Arena) afterLock(p *process, ok bool) {
	if p.n == 0 {
		return
	}
	a.mu.Lock()
	var due []armedOn
	kept := a.armed[:0]
	for _, x := range a.armed {
		e := a.nodes[x.x.node]
		holds := ok && len(a.live.HoldKeys(p.n)[x.x.node]) > 0
		refused := !ok && x.x.afterHeld && e.held && e.heldBy == p.n
		if (x.x.buyer == nil || x.x.buyer.p == p) && (holds || refused) {
			due = append(due, x)
			continue
		}
		kept = append(kept, x)
	}
	a.armed = kept
	a.mu.Unlock()
	for _, x := range due {
		x.x.strike(x.s.actor(p.n))
	}
}

// lockCalls is how many Lock calls p has made.
func (a *Arena) lockCalls(p *process) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return p.lockCalls
}

// nowhere records that the scenario's fault found nowhere to strike, and why: the cell gets no
// verdict.
// Where the lock lived outside the run's keys, that is the reason, named ("the failover found no
// lock to strike: your Lock wrote `lock:lockstep:…:lock:product:1001`, outside the run's keys…").
func (a *Arena) nowhere(format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	a.mu.Lock()
	if a.outside != "" {
		if i := strings.Index(what, ": "); i > 0 {
			what = what[:i]
		}
		what += ": " + a.outside
	}
	a.mu.Unlock()
	a.recordNow(history.Record{Kind: history.RecNowhere, What: what})
}

// note records what of the scenario did not happen as staged, and is no gap in the verdict.
func (a *Arena) note(format string, args ...any) {
	a.recordNow(history.Record{Kind: history.RecNote, What: fmt.Sprintf(format, args...)})
}

// Ordinal is "1st", "2nd", "3rd", "4th"…
func Ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprint(n) + suffix
}

// JoinAnd joins "a", "b" and "c".
func JoinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
