package arena

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
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

// The faults, by the names the moves give them in records and events.
const (
	FaultError      history.Fault = "error"       // the work inside the critical section returns an error
	FaultCrash      history.Fault = "crash"       // the process dies: no command of it, deferred or not, reaches Redis
	FaultSlow       history.Fault = "slow"        // the work goes on, the process alive, until its counterpart acts
	FaultPause      history.Fault = "pause"       // stop-the-world just before the stock write leaves, until its counterpart acts
	FaultUnlockRace history.Fault = "unlock-race" // the process freezes just before a command of its Unlock, until its counterpart acts
	FaultFailover   history.Fault = "failover"    // the next lock write is not replicated, and the primary then dies
	FaultReentrant  history.Fault = "reentrant"   // the work calls a helper that takes the same lock again
	FaultPartition  history.Fault = "partition"   // inside its work, the process loses its links to the lock nodes until its counterpart acts
	FaultSecond     history.Fault = "second"      // the process starts a second order at once, with the same Locker
	FaultRestart    history.Fault = "restart"     // the lock node restarts without persistence, forgetting every key
	FaultLostReply  history.Fault = "lost-reply"  // a lock command's reply is lost: it landed, its client saw a timeout
	FaultGreedy     history.Fault = "greedy"      // after each release of its lock, its retry reaches Redis before any other buyer's command
	FaultClockSkew  history.Fault = "clock-skew"  // the process's wall clock runs ahead of the machine's (Skewed)
)

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

// armedFault is a move waiting in a process for its moment: in the shop's work, at its stock
// write. until makes, as it strikes, what it lasts until (nil: its cap alone).
type armedFault struct {
	m     *move
	until func() Wait
	cap   time.Duration
}

// arm sets a fault of b's process that waits for its moment, and wakes its work if it is in it.
func (b *Actor) arm(f history.Fault, lasting bool, cap time.Duration, where string) {
	s := b.s
	x := &armedFault{cap: cap}
	if lasting {
		x.until = func() Wait { return s.Met(b) }
	}
	x.m = s.newMove(f, func(m *move) {
		s.a.nowhere("the %s fault never struck: buyer %d's order never called %s, where it strikes", f, b.N, where)
	})
	b.p.arm(x)
}

// lasting says in words how long a lasting move of cap lasts.
func (a *Arena) lasting(cap time.Duration) string {
	return fmt.Sprintf("%s, at most %s", counterpart, cap)
}

// FailWork makes the buyer's work return an error, at once if it is at work, else in its next
// order's work.
func (b *Actor) FailWork() { b.arm(FaultError, false, 0, "Shop.Work") }

// SlowWork makes the buyer's work go on, its process alive, until its counterpart has acted (at
// most 6 × TTL): at once if it is at work, else in its next order's.
func (b *Actor) SlowWork() { b.arm(FaultSlow, true, capWork*b.s.a.t.TTL, "Shop.Work") }

// NestedLock makes the buyer's work call a helper that takes the lock its order holds, as the
// articles' service A calls service B.
func (b *Actor) NestedLock() { b.arm(FaultReentrant, false, 0, "Shop.Work") }

// CutInWork cuts, inside the buyer's work, its links to the lock nodes (not to the inventory)
// until its counterpart has acted (at most 6 × TTL); it works on, and writes once the link is
// back (unless its lock stopped it).
func (b *Actor) CutInWork() { b.arm(FaultPartition, true, capWork*b.s.a.t.TTL, "Shop.Work") }

// PauseBeforeWrite stops the buyer's whole process (its timers and watchdog too) just before its
// stock write leaves, until its counterpart has acted (at most 6 × TTL): the write is on its way
// and goes out when the pause ends, whatever the context says by then.
func (b *Actor) PauseBeforeWrite() {
	b.arm(FaultPause, true, capWork*b.s.a.t.TTL, "Shop.SetStock, Shop.SetStockFenced or Shop.Sell")
}

// CrashInWork kills the buyer's process inside its work: at once if it is at work, else in its
// next order's work.
func (b *Actor) CrashInWork() { b.arm(FaultCrash, false, 0, "Shop.Work") }

// Crash kills the buyer's process now: its connections close, its goroutines' commands are
// refused, no deferred code of it reaches Redis.
func (b *Actor) Crash() {
	m := b.s.newMove(FaultCrash, nil)
	if m.strike(b.N, crashSays, nil, 0) {
		b.p.crash()
	}
}

// crashSays is what a crash does.
const crashSays = "the process dies: its connections close, and none of its code, deferred or not, reaches Redis again"

// says is what an armed fault says as it strikes.
func (x *armedFault) says(a *Arena) string {
	switch x.m.f {
	case FaultError:
		return "its work returns an error"
	case FaultCrash:
		return crashSays
	case FaultSlow:
		return "its work goes on, the process alive, " + a.lasting(x.cap)
	case FaultReentrant:
		return "its work calls a helper that takes the same lock"
	case FaultPartition:
		return "its link to the lock server is cut (not to the inventory), " + a.lasting(x.cap) + "; it keeps working"
	case FaultPause:
		return "the whole process stops (its watchdog too) just before its stock write leaves, " + a.lasting(x.cap)
	}
	return string(x.m.f)
}

// FreezeBeforeUnlockCommand freezes the buyer's whole process before the gap-th command of its
// next Unlock (one begun holding a lock) that names a key its Lock wrote — gap 0: before the
// first such command that may delete one — until its counterpart has acted (at most 4 × TTL).
// Struck says before which command it froze; Touched how many of the call's commands named
// those keys.
func (b *Actor) FreezeBeforeUnlockCommand(gap int) *UnlockRace {
	s := b.s
	r := &unlockRace{gap: gap, cap: capUnlock * s.a.t.TTL, until: func() Wait { return s.Met(b) }}
	r.m = s.newMove(FaultUnlockRace, func(m *move) {
		b.p.mu.Lock()
		unlocks := r.unlocks
		b.p.mu.Unlock()
		switch {
		case s.a.lockCalls(b.p) == 0:
			s.a.note("buyer %d's order takes no lock: there is no release to race", b.N)
		case gap > 1:
			// a later play's gap may not be there: its release went otherwise
		case unlocks == 0:
			s.a.nowhere("the unlock-race found nowhere to strike: buyer %d never called Unlock holding a lock its Lock wrote", b.N)
		default:
			s.a.nowhere("the unlock-race found nowhere to strike: buyer %d's Unlock sent no command that names a key its Lock wrote", b.N)
		}
	})
	s.a.mu.Lock()
	r.after = s.a.nextCall
	s.a.mu.Unlock()
	b.p.mu.Lock()
	b.p.race = r
	b.p.mu.Unlock()
	u := &UnlockRace{r: r, p: b.p}
	s.mu.Lock()
	s.race = u
	s.mu.Unlock()
	return u
}

// UnlockRace is what a freeze before an unlock command learned.
type UnlockRace struct {
	r *unlockRace
	p *process
}

// Struck is the label of the command the freeze came before ("" if it did not strike).
func (u *UnlockRace) Struck() string {
	u.p.mu.Lock()
	defer u.p.mu.Unlock()
	return u.r.label
}

// Touched is the most commands an Unlock call (of any buyer, begun holding a lock) carried out
// that named a key its Lock wrote: the gaps an unlock-race can try.
func (u *UnlockRace) Touched() int {
	a := u.p.a
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unlockTouched
}

// LoseLockReply loses the reply to the buyer's next Lock command that may write: the command
// reaches the server and does what it does, but the reply never reaches the client, which waits
// until its read times out (a quarter TTL) and, like go-redis, sends the command again (MaxRetries).
// MIT 6.5840's labrpc drops replies so; the acquire is indeterminate. The Wait closes once the
// command whose reply is lost has gone out.
func (b *Actor) LoseLockReply() Wait {
	s := b.s
	m := s.newMove(FaultLostReply, func(m *move) {
		if s.a.lockCalls(b.p) == 0 {
			s.a.note("buyer %d's order takes no lock: there is no lock reply to lose", b.N)
			return
		}
		s.a.nowhere("the lost reply found nowhere to strike: buyer %d's Lock sent no command that may write", b.N)
	})
	b.p.mu.Lock()
	b.p.lose = &lostReply{m: m, after: s.a.t.TTL / 4}
	b.p.mu.Unlock()
	return m.Struck()
}

// SecondRequest starts, once the buyer's order under way is inside the critical section or at its
// work (at once if it is; once its next order is, if this one has written already), a second order on the same process with the same Locker, as a second request
// on one server: the first stays inside until the second has met the lock, and the second until
// the first is done (each at most 2 × TTL).
func (b *Actor) SecondRequest() {
	s := b.s
	m := s.newMove(FaultSecond, func(m *move) {
		s.a.nowhere("the second request never started: buyer %d's order never got in nor returned", b.N)
	})
	k := b.current()
	if s.sig.has(sigKey{buyer: b.N, order: k, kind: sigWrote}) || s.sig.has(sigKey{buyer: b.N, order: k, kind: sigDone}) {
		k++ // that order is past its critical section: the second request meets its next one
	}
	first := k
	// The first stays until the second has met the lock, or is under way (an order that takes no
	// lock meets none).
	b.stayInside(first, s.FirstOf(b.OrderSettled(first+1), b.orderUnder(first+1)))
	// It counts as an order from now: a play waits for it.
	s.run(b, func(ctx context.Context) {
		if !s.await(b.orderUnder(first)) {
			return
		}
		if !m.strike(b.N, "the same process starts a second order, with the same Locker (a second request to one server)", nil, 0) {
			return
		}
		b.order(ctx, orderPlan{hold: b.OrderDone(first)})
	})
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

// FailoverAfterLockWrite holds lock node 0's replication back right before the next command of a
// Lock call of b (nil: of anyone) that may write there while no hold has a key there (the lock is
// free: what is lost is that write, not an earlier release), and fails the node over right after
// that call returns holding a key it wrote there, before its caller goes on: the write is lost. A
// Lock that refused after its held-back write (it waited for a replica that never acknowledged
// it) is struck as it returns too. The holder then stays inside until another buyer is inside too (at most 2 × TTL), so the lost
// lock shows as two buyers inside, not as luck.
func (s *Stage) FailoverAfterLockWrite(b *Actor) error {
	e := s.a.nodes[0]
	if !e.node.CanFailover() {
		return fmt.Errorf("%w: failover needs a lock replica to promote, and the %s backend has a single node", ErrCannotStage, s.a.env.Backend())
	}
	s.a.mu.Lock()
	if e.failedOver {
		s.a.mu.Unlock()
		return ErrFailedOver
	}
	if b == nil {
		e.holdFor = 0
	} else {
		e.holdFor = b.N
	}
	e.holdArmed = true
	s.a.mu.Unlock()
	m := s.newMove(FaultFailover, func(m *move) { s.nodeMoveUnmet(b, "failover", e) })
	s.armNode(&armed{node: 0, buyer: b, m: m, afterHeld: true, strike: func(h *Actor) {
		m.strike(h.N, "the lock node it wrote on fails over before the write reached the replica", nil, 0)
		e.turn.Lock()
		s.a.failover(e)
		e.turn.Unlock()
		h.stayInside(h.current(), s.Others(h))
	}})
	return nil
}

// ErrFailedOver is what a second failover of one node answers: its replica was promoted already.
var ErrFailedOver = fmt.Errorf("the replica was already promoted: r resets the lab to fail over again")

// RestartAfterLockWrite restarts lock node 0 without persistence right after the next Lock call
// of b (nil: of anyone) that returns holding a key it wrote there (for an order that takes no
// lock: as it works). From then until another buyer has met the lock (or the holder has written,
// or is done), the holder's lock commands are held back, as over a network that is slow while the
// node comes back, so a lease guard's renewal cannot land on the empty node first; the holder
// stays inside until another buyer is inside too (at most 2 × TTL). Restarted closes once the node
// is back.
func (s *Stage) RestartAfterLockWrite(b *Actor) error {
	e := s.a.nodes[0]
	if !e.node.CanRestart() {
		return fmt.Errorf("%w: restart needs a lock node the lab owns, and the %s backend is a server it does not", ErrCannotStage, s.a.env.Backend())
	}
	m := s.newMove(FaultRestart, func(m *move) { s.nodeMoveUnmet(b, "restart", e) })
	var once sync.Once
	restart := func(h *Actor) {
		once.Do(func() {
			m.strike(h.N, "its lock node restarts without persistence and forgets every key", nil, 0)
			unblock := make([]func(), len(h.p.lock))
			for i := range h.p.lock {
				unblock[i] = h.p.block(i)
			}
			e.turn.Lock()
			s.a.nodeChange(e, history.NodeRestart, e.node.Restart)
			e.turn.Unlock()
			s.sig.fire(sigKey{kind: sigRestarted})
			h.stayInside(h.current(), s.Others(h))
			s.after(s.FirstOf(s.Found(h), h.Wrote(), h.Done()), func() {
				for _, u := range unblock {
					u()
				}
			})
		})
	}
	s.armNode(&armed{node: 0, buyer: b, m: m, strike: restart})
	if b != nil {
		// An order that takes no lock is hit as it works.
		s.spawn(func() {
			if !s.await(b.Under()) || s.a.lockCalls(b.p) > 0 {
				return
			}
			s.a.note("buyer %d's order takes no lock: the restart struck as it worked", b.N)
			restart(b)
		})
	}
	return nil
}

// Restarted closes once a restart move has brought the node back.
func (s *Stage) Restarted() Wait { return s.sig.get(sigKey{kind: sigRestarted}) }

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
		holds := ok && len(a.ref.HoldKeys(p.n)[x.x.node]) > 0
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
