package arena

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
)

// Stage is a play's hands on its arena, as hashicorp/raft's testing cluster has Disconnect and
// Partition: buyers to put on it, the named moves that fault a process at a point defined by what
// it did (fault_*.go), and typed waits to sequence them with, all under one long-stop (the play's
// deadline, or a live session's end). A scripted scenario is a short program of these
// (internal/scenario), and the terminal lab's fault keys call the same moves on a live session's
// holder, so a key does what its scenario does.
//
// Hazard: a wait is for something a process did, never for a moment on the clock; a program that
// sleeps to let something happen races the machine's load. Sleep only to place a buyer's arrival
// after something it must find (a lease long gone), and then by whole fractions of the TTL.
type Stage struct {
	a    *Arena
	ctx  context.Context // the long-stop
	sig  *signals
	gate chan struct{} // closed once the program first waits: orders started before start together
	open sync.Once

	wg      sync.WaitGroup // the moves' and the waits' own goroutines (spawn)
	closed  bool           // Close has begun: spawn no longer counts what it starts
	orders  sync.WaitGroup // the order goroutines
	mu      sync.Mutex
	running map[int]int // buyer → order goroutines under way
	moves   []*move     // every move made, to say at the end which never struck
	try     int         // the play's number, where a scenario plays several (unlock-race: the gap)
	unit    history.Timing
	race    *UnlockRace // the last freeze before an unlock command armed, for what it learned
}

// Wait is something a play waits for: it closes once it has happened. A nil Wait never closes.
type Wait <-chan struct{}

// Actor is one buyer on a stage: a process of its own, with its own clients and Locker.
type Actor struct {
	s *Stage
	p *process
	// N is the buyer's number, from 1.
	N int
}

// NewStage opens a stage on a for a play whose long-stop is ctx; try is the play's number where
// a scenario plays several (1 otherwise); unit is the step's TTL and Work before the scenario
// stretched them (a program places arrivals in it).
func (a *Arena) NewStage(ctx context.Context, try int, unit history.Timing) *Stage {
	return &Stage{a: a, ctx: ctx, sig: a.sig, gate: make(chan struct{}), running: map[int]int{}, try: try, unit: unit}
}

// Unit is the step's TTL and Work before the scenario stretched them: a program places arrivals
// in it.
func (s *Stage) Unit() history.Timing { return s.unit }

// Race is the last freeze before an unlock command the program armed (nil if none): what it
// learned.
func (s *Stage) Race() *UnlockRace {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.race
}

// Arena is the stage's arena.
func (s *Stage) Arena() *Arena { return s.a }

// Timing is the play's clock: every program is written in its TTL and Work.
func (s *Stage) Timing() history.Timing { return s.a.t }

// Try is the play's number, from 1, where a scenario plays several.
func (s *Stage) Try() int { return s.try }

// Ctx is the long-stop: it ends when the play must.
func (s *Stage) Ctx() context.Context { return s.ctx }

// Buyer puts a new buyer on the stage.
func (s *Stage) Buyer(opts ...BuyerOption) *Actor {
	b := &Actor{s: s, p: s.a.addBuyer()}
	b.N = b.p.n
	for _, o := range opts {
		o(b)
	}
	return b
}

// Buyers puts n new buyers on the stage.
func (s *Stage) Buyers(n int) []*Actor {
	out := make([]*Actor, n)
	for i := range out {
		out[i] = s.Buyer()
	}
	return out
}

// actor is the actor of buyer n on this stage (a live session's buyers too).
func (s *Stage) actor(n int) *Actor {
	p := s.a.proc(n)
	if p == nil {
		return nil
	}
	return &Actor{s: s, p: p, N: n}
}

// Holder is the buyer inside the critical section (the first in, if several are), or else the
// owner of the first lock held; nil when there is none, or when it is in its Unlock. Hazard: a key
// pressed as the holder's Unlock has sent its DEL would strike a buyer whose lock is already on
// its way out (a crash on 03 then leaves no stuck lock, where the matrix says one): the key waits
// for the next holder instead.
func (s *Stage) Holder() *Actor { return s.actor(s.a.Holder()) }

// A BuyerOption sets a buyer up as it comes on the stage.
type BuyerOption func(*Actor)

// after runs f once w has happened, or at the long-stop.
func (s *Stage) after(w Wait, f func()) {
	s.spawn(func() {
		defer f()
		select {
		case <-w:
		case <-s.ctx.Done():
		}
	})
}

// — orders —

// An OrderOption says how an order plays.
type OrderOption func(*orderPlan)

type orderPlan struct {
	hold    Wait          // stay inside after the work until it happens (at most holdFor)
	holdFor time.Duration // from the work's start, how long hold may keep it inside (0: 2 × TTL)
	atLeast time.Duration // work at least this long
}

// HoldUntil keeps the order inside the critical section after its work until w has happened (at
// most 2 × TTL), then one Work more: what it waited for, and the overlap it was held for, are on
// the timeline together.
func HoldUntil(w Wait) OrderOption { return func(o *orderPlan) { o.hold = w } }

// HoldAtMost ends HoldUntil's hold, and the Work after it, by d after the work began, whatever has
// happened by then. Hazard: a hold that outlasts the holder's lease lets the next buyer in under it
// (an overlap the scenario did not stage): a buyer whose first command is late (a Sentinel client
// asks its Sentinels first) kept the holder of a 1-TTL lease inside for up to 2 × TTL.
func HoldAtMost(d time.Duration) OrderOption { return func(o *orderPlan) { o.holdFor = d } }

// WorkAtLeast makes the order's work last at least d (at most 2 × TTL): a holder that stays
// inside that long whatever the machine's pace, so that waiters' patience, counted in tries, is
// spent against time the lock is surely held.
func WorkAtLeast(d time.Duration) OrderOption { return func(o *orderPlan) { o.atLeast = d } }

// Order starts one order of the buyer (at most 10 × TTL long).
func (b *Actor) Order(opts ...OrderOption) {
	var pl orderPlan
	for _, o := range opts {
		o(&pl)
	}
	b.s.run(b, func(ctx context.Context) { b.order(ctx, pl) })
}

// KeepOrdering orders again and again until the shop is sold out (Arena.SoldOut), one Work apart, as a shopper does; a
// greedy buyer orders again the instant its order returns. Hazard: without the pause a buyer that
// has just released takes the lock back before a waiter asleep in a back-off wakes, so the only
// idle gaps left are those after the last sale, a handful whose length is luck (step 10 under
// load was not idle in 1 play of 1000).
func (b *Actor) KeepOrdering(opts ...OrderOption) {
	var pl orderPlan
	for _, o := range opts {
		o(&pl)
	}
	greedy := b.s.a.prio.is(b.p)
	b.s.run(b, func(ctx context.Context) {
		if greedy {
			defer b.s.a.prio.close() // no more head starts once it stops ordering
		}
		for {
			b.order(ctx, pl)
			if b.p.isDead() || ctx.Err() != nil || b.s.a.SoldOut() {
				return
			}
			// After a sale, a refusal, or whatever error value the step chose for one.
			if !greedy && b.p.sleep(ctx, b.s.a.t.Work) != nil {
				return
			}
		}
	})
}

// order is one order of b, within 10 × TTL and the long-stop.
func (b *Actor) order(ctx context.Context, pl orderPlan) error {
	octx, cancel := context.WithTimeout(ctx, 10*b.s.a.t.TTL)
	defer cancel()
	return b.s.a.order(octx, b.p, pl)
}

// run starts f as an order goroutine of b: it waits for the program's first wait (orders started
// before it start together), and counts as running until it returns.
func (s *Stage) run(b *Actor, f func(ctx context.Context)) {
	if s.ctx.Err() != nil {
		return // the long-stop came: nothing new starts
	}
	s.mu.Lock()
	s.running[b.N]++
	s.mu.Unlock()
	s.orders.Add(1)
	go func() {
		defer s.orders.Done()
		defer func() {
			s.mu.Lock()
			s.running[b.N]--
			s.mu.Unlock()
		}()
		select {
		case <-s.gate:
		case <-s.ctx.Done():
			return
		}
		if s.ctx.Err() != nil {
			return
		}
		f(s.ctx)
	}()
}

// starts lets the orders started so far go, together.
func (s *Stage) starts() { s.open.Do(func() { close(s.gate) }) }

// — waiting —

// Wait blocks the program until one of ws has happened; false when the long-stop came first.
func (s *Stage) Wait(ws ...Wait) bool {
	s.starts()
	return s.await(ws...)
}

// await blocks until one of ws has happened; false at the long-stop.
func (s *Stage) await(ws ...Wait) bool {
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.ctx.Done())}}
	for _, w := range ws {
		if w != nil {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf((<-chan struct{})(w))})
		}
	}
	i, _, _ := reflect.Select(cases)
	return i != 0
}

// Sleep blocks the program for d; false when the long-stop came first.
func (s *Stage) Sleep(d time.Duration) bool {
	s.starts()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// FirstOf closes when one of ws has happened (or at the long-stop).
func (s *Stage) FirstOf(ws ...Wait) Wait {
	c := make(chan struct{})
	s.spawn(func() {
		defer close(c)
		s.await(ws...)
	})
	return c
}

// Entered closes when the buyer's order (any) is inside the critical section: it read the stock.
func (b *Actor) Entered() Wait { return b.s.sig.get(sigKey{buyer: b.N, kind: sigEntered}) }

// Done closes when an order of the buyer has returned.
func (b *Actor) Done() Wait { return b.s.sig.get(sigKey{buyer: b.N, kind: sigDone}) }

// Wrote closes when an order of the buyer wrote the stock.
func (b *Actor) Wrote() Wait { return b.s.sig.get(sigKey{buyer: b.N, kind: sigWrote}) }

// Settled closes when the buyer has met the lock: got in, been refused, found it taken, or
// finished an order.
func (b *Actor) Settled() Wait { return b.s.sig.get(sigKey{buyer: b.N, kind: sigSettled}) }

// Under closes when the buyer's order is under way past its lock: inside the critical section,
// at its work (an order that takes no lock works first), or done.
func (b *Actor) Under() Wait { return b.s.sig.get(sigKey{buyer: b.N, kind: sigUnder}) }

// OrderEntered, OrderDone and OrderSettled are those waits for the buyer's k-th order.
func (b *Actor) OrderEntered(k int) Wait {
	return b.s.sig.get(sigKey{buyer: b.N, order: k, kind: sigEntered})
}

// OrderDone closes when the buyer's k-th order has returned.
func (b *Actor) OrderDone(k int) Wait {
	return b.s.sig.get(sigKey{buyer: b.N, order: k, kind: sigDone})
}

// OrderSettled closes when the buyer's k-th order has met the lock.
func (b *Actor) OrderSettled(k int) Wait {
	return b.s.sig.get(sigKey{buyer: b.N, order: k, kind: sigSettled})
}

// AllSettled closes once every buyer on the stage but except has met the lock.
func (s *Stage) AllSettled(except *Actor) Wait { return s.sig.allBut(except.N, sigSettled) }

// Met closes once a buyer other than b has met the lock in a way that settles what a fault on b
// was staged for: it got in (at any time from now), or, once a TTL has passed — past any lease b's
// lock could have had as the fault struck —, it found the lock taken, was refused, or finished an
// order: the lock outlived b's lease (renewed, or it never expires). Before that TTL a refusal
// says nothing: b's lease is still good. It is what a lasting move waits for: its counterpart has
// acted. A counterpart that got in stays inside until b's order under way is done (at most
// 2 × TTL), as a scenario's second buyer does, so the two are seen inside together.
func (s *Stage) Met(b *Actor) Wait {
	c := make(chan struct{})
	in := s.entered(b)
	ttl := s.a.t.TTL
	s.spawn(func() {
		defer close(c)
		t := time.NewTimer(ttl)
		defer t.Stop()
		select {
		case <-in:
			return
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.await(Wait(in), s.Found(b))
	})
	return c
}

// Others closes once a buyer other than b is inside the critical section (or at its work, for an
// order that works before it touches the stock); that buyer then stays inside until b's order under
// way is done (at most 2 × TTL).
func (s *Stage) Others(b *Actor) Wait { return s.entered(b) }

// entered is Others: it closes once another buyer is in, and holds that buyer's order inside until
// b's order under way (as b's order count stands now) is done.
func (s *Stage) entered(b *Actor) chan struct{} {
	c := make(chan struct{})
	ev := s.sig.nextEvent(func(e referee.Event) bool {
		return e.Buyer > 0 && e.Buyer != b.N && (e.Kind == referee.EvEnter || e.Kind == referee.EvWork)
	})
	mine := b.current()
	s.spawn(func() {
		select {
		case e := <-ev:
			if x := s.actor(e.Buyer); x != nil && e.Order > 0 {
				x.stayInside(e.Order, b.OrderDone(mine))
			}
			close(c)
		case <-s.ctx.Done():
		}
	})
	return c
}

// Found closes at the first event from now on in which a buyer other than b has met the lock at
// all: got in, been refused, found it taken, or finished an order.
func (s *Stage) Found(b *Actor) Wait {
	return s.sig.next(func(e referee.Event) bool {
		return e.Buyer > 0 && e.Buyer != b.N &&
			(e.Kind == referee.EvEnter || e.Kind == referee.EvRefused || e.Kind == referee.EvDone || e.Kind == referee.EvWaiting)
	})
}

// Looked closes when b has got in or finished, or grace after it found the lock taken: time for
// a takeover it decides on (a GETSET of a lock its clock calls expired) to land.
func (s *Stage) Looked(b *Actor, grace time.Duration) Wait {
	c := make(chan struct{})
	entered, done, settled := b.Entered(), b.Done(), b.Settled()
	s.spawn(func() {
		defer close(c)
		select {
		case <-entered:
			return
		case <-done:
			return
		case <-s.ctx.Done():
			return
		case <-settled:
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-entered:
		case <-done:
		case <-s.ctx.Done():
		case <-t.C:
		}
	})
	return c
}

// — the end —

// Finish waits for the play's orders to return (or the long-stop), says what of the program did
// not happen as staged, and returns "" or why the play has no verdict (it ran past its deadline:
// buyers still ordering then are named). After Finish the stage's goroutines have ended.
func (s *Stage) Finish(deadline time.Duration, cancelled func() bool) string {
	s.starts()
	orders := make(chan struct{})
	go func() {
		s.orders.Wait()
		close(orders)
	}()
	timedOut := ""
	select {
	case <-orders:
	case <-s.ctx.Done():
		timedOut = fmt.Sprintf("the scenario ran past its deadline of %v", deadline)
		if cancelled() {
			timedOut = "the run was cancelled"
		}
		if !waitFor(orders, 2*s.a.t.TTL) {
			// Orders that ignore their context: kill their processes, so their commands
			// stop, and give them one more TTL to return.
			s.a.mu.Lock()
			procs := s.a.procs
			s.a.mu.Unlock()
			for _, p := range procs {
				p.crash()
			}
			waitFor(orders, s.a.t.TTL)
		}
		var still []string
		s.mu.Lock()
		for n := 1; n <= len(s.a.procs); n++ {
			if s.running[n] > 0 {
				still = append(still, fmt.Sprint(n))
			}
		}
		s.mu.Unlock()
		if len(still) > 0 {
			timedOut += "; buyers still ordering: " + strings.Join(still, ", ")
		}
	}
	return timedOut
}

// Close waits for the goroutines the stage's moves and waits started; the caller has ended its
// long-stop. The orders are Finish's: an order deaf to its context may outlive the play (its
// process is dead by then), and the run says so.
func (s *Stage) Close() {
	s.starts()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
}

// spawn runs f in a goroutine of the stage's own, one Close waits for. Hazard: a process's own
// goroutine (Proc.Go: a release sent after Unlock returned) can outlive the stage and make a wait
// (an unlock-race's counterpart) after Close has begun; counting it then raced Close's Wait. Past
// Close, f runs uncounted: every wait of the stage ends with its long-stop, which has ended.
func (s *Stage) spawn(f func()) {
	s.mu.Lock()
	counted := !s.closed
	if counted {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	go func() {
		if counted {
			defer s.wg.Done()
		}
		f()
	}()
}

// Unmet says, after a play, what of its moves found nowhere to strike: a record that makes the run
// no verdict, or a note where the order takes no lock at all (nothing to act on).
func (s *Stage) Unmet() {
	for _, m := range s.moves {
		m.unmet()
	}
}

func waitFor(c <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}
