package sim

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// buyerPlan is one buyer of a scripted scenario.
type buyerPlan struct {
	after  time.Duration // start this long after the first buyer entered (or finished); 0 with the first
	fault  Fault         // armed on the process before its order
	holdBy int           // stay inside after the work until this buyer's event below (capped)
	until  EventKind     // EvEnter or EvDone of holdBy
	repeat bool          // keep ordering (retrying after a refusal) while stock remains
	// witness: this buyer's fault does not end before that buyer has entered, found the lock
	// taken, or finished (see process.witness); the fault gives up waiting after witnessCap.
	witness    int
	witnessCap time.Duration
}

// plan is a scripted scenario, in units of the arena's Timing. Each forces its bad interleaving on
// purpose and leaves at least a quarter TTL of margin on either side of every race it sets up, so
// its verdict does not depend on scheduling luck.
type plan struct {
	stock    int
	workX    int  // the normal work is Timing.Work × workX
	ttlX     int  // the lease is Timing.TTL × ttlX
	together bool // every buyer starts at once
	failover bool // arm a failover before the first buyer starts
	buyers   []buyerPlan
	deadline time.Duration // the longest one run of the plan may take
}

func planFor(sc steps.Scenario, t Timing) plan {
	T, W := t.TTL, t.Work
	one := func(f Fault) buyerPlan { return buyerPlan{fault: f} }
	later := func(d time.Duration) buyerPlan { return buyerPlan{after: d} }
	held := func(d time.Duration) buyerPlan { return buyerPlan{after: d, holdBy: 1, until: EvDone} }
	p := plan{stock: 3, workX: 1, ttlX: 1, deadline: 30 * T}
	switch sc {
	case steps.Contention:
		p.together = true
		for range 8 {
			p.buyers = append(p.buyers, buyerPlan{})
		}
	case steps.Error, steps.Crash:
		// The lock of a dead or failed holder must be free again once its TTL has run out.
		p.buyers = []buyerPlan{one(faultOf(sc)), later(3 * T / 2), later(8 * T / 5)}
	case steps.Slow, steps.Pause:
		// The holder is away for 3 TTL. The second buyer comes 0.6 TTL before it is back: the lock
		// expired long ago, and the second buyer's own lease outlasts the holder's return by 0.4 TTL.
		// The holder is not back before the second buyer got in or found the lock taken.
		first := one(faultOf(sc))
		first.witness, first.witnessCap = 2, 6*T
		p.buyers = []buyerPlan{first, held(12 * T / 5)}
	case steps.UnlockRace:
		// The holder writes at W, checks its lock, and freezes for 1.8 TTL before deleting it. The
		// second buyer comes 0.3 TTL after the holder's lease ended and 0.5 TTL before the delete;
		// the holder stays frozen until the second buyer got in or found the lock taken.
		first := one(FaultUnlockRace)
		first.witness, first.witnessCap = 2, 4*T
		p.buyers = []buyerPlan{first, held(W + 13*T/10)}
	case steps.Reentrant:
		p.buyers = []buyerPlan{one(FaultReentrant), later(T / 10), later(T / 5)}
	case steps.Failover:
		// The holder stays inside until the second buyer, on the promoted replica, is inside too.
		p.failover = true
		p.buyers = []buyerPlan{{holdBy: 2, until: EvEnter}, held(T / 10)}
	case steps.Load:
		// Commands per order of a spinning step are waiters × work ÷ time per spin. Under the
		// race detector on 2 overloaded cores a spin was measured at up to 3 ms; 7 waiters and
		// 10 × Work keep even that run well above the flood limit. The lease is 4 × TTL, so
		// the work (a quarter of it) never outlives a lock: load measures traffic, nothing else.
		p.stock, p.workX, p.ttlX, p.together = 5, 10, 4, true
		for range 8 {
			p.buyers = append(p.buyers, buyerPlan{repeat: true})
		}
	}
	return p
}

// Run plays scenario sc against cfg.Step on a fresh arena and returns the referee's report.
func Run(ctx context.Context, cfg Config, sc steps.Scenario) (*Report, error) {
	if _, ok := steps.Judges[sc]; !ok {
		return nil, errors.New("sim: unknown scenario " + string(sc))
	}
	if cfg.Timing == (Timing{}) {
		cfg.Timing = DefaultTiming()
	}
	pl := planFor(sc, cfg.Timing)
	if pl.failover && !cfg.Env.CanFailover() {
		return nil, errors.New("sim: the failover scenario needs a lock server with a replica; the " + cfg.Env.Backend() + " backend has none")
	}
	cfg.Stock = pl.stock
	cfg.Timing.Work *= time.Duration(pl.workX)
	cfg.Timing.TTL *= time.Duration(pl.ttlX)
	sig := newSignals()
	user := cfg.OnEvent
	cfg.OnEvent = func(e Event) {
		sig.see(e)
		if user != nil {
			user(e)
		}
	}
	a, err := NewArena(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(ctx, pl.deadline)
	defer cancel()
	if pl.failover {
		if err := a.armFailover(); err != nil {
			return nil, err
		}
	}
	procs := make([]*process, len(pl.buyers))
	for i := range pl.buyers {
		procs[i] = a.addBuyer()
	}
	var wg sync.WaitGroup
	ready := make(chan struct{}) // buyers that start together wait here until all are spawned
	for i, b := range pl.buyers {
		p := procs[i]
		if b.fault != FaultNone {
			p.arm(b.fault)
		}
		if b.witness != 0 {
			p.witness, p.witnessCap = sig.get(b.witness, "settled"), b.witnessCap
		}
		var hold <-chan struct{}
		if b.holdBy != 0 {
			hold = sig.get(b.holdBy, b.until)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			if i > 0 && !pl.together {
				select {
				case <-sig.anchor():
				case <-ctx.Done():
					return
				}
				if p.sleep(ctx, b.after) != nil {
					return
				}
			}
			for {
				octx, ocancel := context.WithTimeout(ctx, 10*a.t.TTL)
				err := a.order(octx, p, hold)
				ocancel()
				if !b.repeat || p.isDead() || ctx.Err() != nil || a.shelf() <= 0 {
					return
				}
				if errors.Is(err, steps.ErrBusy) && p.sleep(ctx, a.t.Work) != nil {
					return
				}
			}
		}()
	}
	close(ready)
	wg.Wait()
	return a.Report(context.WithoutCancel(ctx), sc), nil
}

// shelf is the stock as last written.
func (a *Arena) shelf() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ref.shelf
}

// signals turns events into channels a scripted scenario can wait on.
type signals struct {
	mu     sync.Mutex
	chans  map[[2]any]chan struct{}
	closed map[[2]any]bool
}

func newSignals() *signals {
	return &signals{chans: map[[2]any]chan struct{}{}, closed: map[[2]any]bool{}}
}

func (s *signals) get(buyer int, k EventKind) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]any{buyer, k}
	c, ok := s.chans[key]
	if !ok {
		c = make(chan struct{})
		s.chans[key] = c
	}
	return c
}

// anchor closes when the first buyer enters the critical section or finishes without entering;
// (n, "settled") closes when buyer n has entered, found the lock taken, or finished.
func (s *signals) anchor() <-chan struct{} { return s.get(1, "anchor") }

func (s *signals) see(e Event) {
	fire := func(k EventKind) {
		key := [2]any{e.Buyer, k}
		if s.closed[key] {
			return
		}
		c, ok := s.chans[key]
		if !ok {
			c = make(chan struct{})
			s.chans[key] = c
		}
		close(c)
		s.closed[key] = true
	}
	switch e.Kind {
	case EvEnter, EvDone, EvWaiting:
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fire("settled")
	if e.Kind == EvWaiting {
		return
	}
	fire(e.Kind)
	if e.Buyer == 1 {
		fire("anchor")
	}
}
