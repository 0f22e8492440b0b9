package arena

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// buyerPlan is one buyer of a scripted scenario.
type buyerPlan struct {
	after  time.Duration     // start this long after the first buyer entered (or finished); 0 with the first
	fault  history.Fault     // armed on the process before its order
	holdBy int               // stay inside after the work until this buyer's event below (capped); -1: every other buyer settled
	until  referee.EventKind // referee.EvEnter, referee.EvDone or settled, of holdBy
	repeat bool              // keep ordering (retrying after a refusal) while stock remains
	greedy bool              // order again the instant an order returns, with a head start on every release
	second bool              // once its first order is inside, start a second order on the same process
	skew   time.Duration     // its wall clock runs this far ahead
	miss   bool              // its link to the last lock node is down until it is inside (quorum topologies)
	// anchor: after counts from this signal of the plan instead of the first buyer's entry.
	anchor referee.EventKind
	// witness: this buyer's fault lasts until that buyer has entered, found the lock taken, or
	// finished (see process.witness), at most witnessCap.
	witness    int
	witnessCap time.Duration
}

// restarted is the restart scenario's signal that the lock node is back, empty.
const restarted referee.EventKind = "restarted"

// settled is the signal of a buyer that has entered the critical section, been refused the lock,
// found it taken, or finished: whatever the lock does, that buyer has met it.
const settled referee.EventKind = "settled"

// plan is a scripted scenario, in units of the arena's Timing. Each forces its bad interleaving on
// purpose: a staged fault lasts until its counterpart has acted, and the counterpart stays inside
// until the faulty buyer is done, so a late goroutine makes a run longer, never different.
type plan struct {
	stock    int
	workX    int  // the normal work is Timing.Work × workX
	ttlX     int  // the lease is Timing.TTL × ttlX
	together bool // every buyer starts at once
	failover bool // lock node 1 fails over right after the first buyer's Lock returns holding a lock written on it
	restart  bool // lock node 1 restarts right after that same moment (or, taking no lock, as it works)
	race     int  // unlock-race: freeze the first buyer before the race-th command of its Unlock that touches its lock
	buyers   []buyerPlan
	deadline time.Duration // the longest one run of the plan may take
}

func planFor(sc steps.Scenario, t history.Timing) plan {
	T, W := t.TTL, t.Work
	one := func(f history.Fault) buyerPlan { return buyerPlan{fault: f} }
	later := func(d time.Duration) buyerPlan { return buyerPlan{after: d} }
	held := func(d time.Duration) buyerPlan { return buyerPlan{after: d, holdBy: 1, until: referee.EvDone} }
	p := plan{stock: 3, workX: 1, ttlX: 1, deadline: 30 * T}
	switch sc {
	case steps.Contention:
		// Everyone starts together; whoever gets in stays until every other buyer has got in,
		// been refused, or found the lock taken.
		p.together = true
		for range 8 {
			p.buyers = append(p.buyers, buyerPlan{holdBy: -1, until: settled})
		}
	case steps.Error, steps.Crash:
		// The lock of a dead or failed holder must be free again once its TTL has run out.
		p.buyers = []buyerPlan{one(faultOf(sc)), later(3 * T / 2), later(8 * T / 5)}
	case steps.Slow, steps.Pause:
		// The holder is away until the second buyer, who comes 2.4 TTL after it got in (its
		// lease long gone), has got in or found the lock taken; the second stays inside until
		// the holder is done.
		first := one(faultOf(sc))
		first.witness, first.witnessCap = 2, 6*T
		p.buyers = []buyerPlan{first, held(12 * T / 5)}
	case steps.UnlockRace:
		// The holder writes at W and freezes inside its Unlock, before one of the commands that
		// touch what its Lock wrote (Run plays each gap in a play of its own). The second buyer
		// comes 0.3 TTL after the holder's lease ended; the holder thaws once the second has got
		// in or found the lock taken, and the second stays inside until the holder is done.
		first := buyerPlan{witness: 2, witnessCap: 4 * T}
		p.race = 1
		p.buyers = []buyerPlan{first, held(W + 13*T/10)}
	case steps.Reentrant:
		// The lease is 4 × TTL: the holder's work, nested call and wait for the second buyer
		// never outlive it, so reentrant judges reentry (and, without a lock, overlap) alone.
		first := one(history.FaultReentrant)
		first.holdBy, first.until = 2, settled
		p.ttlX = 4
		p.buyers = []buyerPlan{first, later(T / 10), later(T / 5)}
	case steps.Failover:
		// The holder stays inside until the second buyer, on the promoted replica, is inside
		// too; the second stays until the holder is done. The lease is 4 × TTL, and at least
		// three times the backend's outage (Run): the lock is lost, not expired. The failover
		// runs inside the holder's lock command, and a lease guard's clock runs meanwhile: a
		// container's failover took 1.45 s on a loaded machine, past a 4 × TTL lease, and the
		// guard stopped the holder before it was inside.
		p.failover, p.ttlX = true, 4
		p.buyers = []buyerPlan{{holdBy: 2, until: referee.EvEnter}, held(T / 10)}
	case steps.Partition:
		// The holder's link to the lock server goes down inside its work, until the second
		// buyer, who comes 2.4 TTL after the holder got in, has got in or found the lock taken;
		// the holder works on and writes when the link is back (unless its lock stopped it).
		first := one(history.FaultPartition)
		first.witness, first.witnessCap = 2, 6*T
		p.buyers = []buyerPlan{first, held(12 * T / 5)}
	case steps.TwoRequests:
		// One process, one Locker, two requests: the second starts once the first is inside,
		// the first stays until the second has got in, been refused or found the lock taken,
		// and the second stays until the first is done.
		p.buyers = []buyerPlan{{second: true}}
	case steps.Greedy:
		// The greedy buyer orders again and again; two others come once it is inside and wait.
		// Both come while its first order works (a Work after it got in, and half a Work
		// later), never at its first release: a quorum lock's second buyer, arriving with the
		// greedy retry, won two of three nodes from it (15: ✓ in 1 of 10 runs).
		p.stock = 6
		p.buyers = []buyerPlan{{repeat: true, greedy: true}, later(T / 20), later(T / 10)}
	case steps.Restart:
		// Lock node 1 restarts, forgetting every key, once the holder is inside. On a quorum
		// the holder missed the last node when it locked (that node was out of its reach), so
		// node 1 was one of the only two it holds. A second buyer comes once the node is back;
		// the holder stays inside until the second is inside too, and the second until the
		// holder is done.
		// The lease is 4 × TTL, and at least three times the backend's outage (Run): the lock
		// is forgotten, not expired. From the restart until the holder's stock write, the
		// holder's lock commands are held back (a network that is slow while the node comes
		// back), so a lease guard's renewal cannot land on the empty node before the second
		// buyer is in: a restart that takes long on a loaded machine only makes the run longer,
		// as long as the lease outlasts it. The node the holder misses refuses it at once, so
		// its lock does not wait out a quorum lock's per-node timeout.
		p.restart, p.ttlX = true, 4
		first := buyerPlan{holdBy: 2, until: referee.EvEnter, miss: true}
		second := held(0)
		second.anchor = restarted
		p.buyers = []buyerPlan{first, second}
	case steps.ClockSkew:
		// A second process whose clock runs 3 × TTL ahead asks while the holder works; the
		// holder stays inside until it has got in or finished, or for a quarter TTL after it
		// found the lock taken: time for a takeover it decides on (a GETSET of a lock that its
		// clock calls expired) to land, on a backend whose round trip is long too.
		first := buyerPlan{holdBy: 2, until: looked}
		second := held(T / 10)
		second.skew = 3 * T
		p.buyers = []buyerPlan{first, second}
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
// unlock-race is played once for each gap of the holder's Unlock (before each of its commands
// that touch what its Lock wrote): the report's verdict is every play's together, its History the
// first play that found a violation (else the first), its Others the rest.
func Run(ctx context.Context, cfg Config, sc steps.Scenario) (*referee.Report, error) {
	if _, ok := steps.Judges[sc]; !ok {
		return nil, errors.New("sim: unknown scenario " + string(sc))
	}
	if err := lacking(ctx, cfg); err != nil {
		return nil, err
	}
	if cfg.Timing == (history.Timing{}) {
		cfg.Timing = history.DefaultTiming()
	}
	pl := planFor(sc, cfg.Timing)
	if pl.race == 0 {
		rep, _, err := play(ctx, cfg, sc, pl)
		return rep, err
	}
	var reps []*referee.Report
	var cmds []string
	n := 1 // the gaps to try: the most commands an Unlock carried out that touched its lock
	for gap := 1; gap <= n; gap++ {
		pl.race = gap
		rep, r, err := play(ctx, cfg, sc, pl)
		if err != nil {
			return nil, err
		}
		n = max(n, r.touched)
		if gap > 1 && r.struck == "" {
			continue // this play's release went another way: there was no such gap in it
		}
		reps = append(reps, rep)
		if r.struck != "" {
			cmds = append(cmds, r.struck)
		}
		if r.struck == "" || rep.TimedOut != "" {
			break
		}
	}
	rep := referee.Merge(reps)
	switch {
	case len(cmds) == 1:
		rep.Notes = append(rep.Notes, fmt.Sprintf("buyer 1's release was one command (%s): the freeze could only come before it", cmds[0]))
	case len(cmds) > 1:
		var where []string
		for i, c := range cmds {
			where = append(where, fmt.Sprintf("the %s (%s)", ordinal(i+1), c))
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("buyer 1's Unlock touched its lock in %d commands: it was frozen before each in a play of its own, before %s", len(cmds), joinAnd(where)))
	}
	return rep, nil
}

// run is one play of a plan: what its staging learned.
type run struct {
	struck  string // unlock-race: the command the holder was frozen before
	touched int    // unlock-race: the commands of the holder's Unlock that touched its lock
}

// play plays plan pl of scenario sc once on a fresh arena.
func play(ctx context.Context, cfg Config, sc steps.Scenario, pl plan) (*referee.Report, *run, error) {
	if pl.failover && !cfg.Env.Nodes()[0].CanFailover() {
		return nil, nil, fmt.Errorf("%w: failover needs a lock replica to promote, and the %s backend has a single node", ErrCannotStage, cfg.Env.Backend())
	}
	if pl.restart && !cfg.Env.Nodes()[0].CanRestart() {
		return nil, nil, fmt.Errorf("%w: restart needs a lock node the lab owns, and the %s backend is a server it does not", ErrCannotStage, cfg.Env.Backend())
	}
	cfg.Stock = pl.stock
	cfg.Scenario, cfg.What, cfg.Judged = sc, steps.Describe[sc], steps.Judges[sc]
	cfg.Timing.Work *= time.Duration(pl.workX)
	cfg.Timing.TTL *= time.Duration(pl.ttlX)
	if pl.failover || pl.restart {
		// The holder's lease, and a lease guard's clock, run while the backend fails over or
		// restarts: the lease outlasts the longest that was measured three times over. What
		// the run stages is counted in leases (holds, back-offs, a quorum's per-node timeout),
		// so its deadline grows as much as the lease did.
		out := cfg.Env.Nodes()[0].Outage()
		if lease := 3 * out; lease > cfg.Timing.TTL {
			pl.deadline = time.Duration(float64(pl.deadline) * float64(lease) / float64(cfg.Timing.TTL))
			cfg.Timing.TTL = lease
		}
	}
	sig := newSignals(len(pl.buyers))
	user := cfg.OnEvent
	cfg.OnEvent = func(e referee.Event) {
		sig.see(e)
		if user != nil {
			user(e)
		}
	}
	a, err := NewArena(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	if cfg.OnArena != nil {
		cfg.OnArena(a)
	}
	rctx, cancel := context.WithTimeout(ctx, pl.deadline)
	defer cancel()
	procs := make([]*process, len(pl.buyers))
	for i, b := range pl.buyers {
		procs[i] = a.addBuyer()
		p := procs[i]
		if b.greedy {
			a.prio.set(p)
		}
		p.skew = b.skew
		if b.miss && len(p.lock) >= 3 {
			unblock := p.refuse(len(p.lock) - 1)
			entered := sig.get(p.n, referee.EvEnter)
			go func() {
				defer unblock()
				select {
				case <-entered:
				case <-rctx.Done():
				}
			}()
		}
	}
	holder := procs[0]
	var staged sync.WaitGroup // the scenario's own goroutines that act on the arena
	if pl.failover {
		if err := a.armFailover(0, holder.n); err != nil {
			return nil, nil, err
		}
	}
	if pl.restart {
		// The restart strikes once the holder's Lock has returned holding a lock written on
		// the node (or, for an order that takes no lock, as it works). From then until the
		// second buyer has met the lock (or the holder has written, or is done), the holder's
		// lock commands are held back (a network that is slow while the node comes back), so a
		// lease guard's renewal cannot land on the empty node first.
		settled, wrote, done := sig.get(2, settled), sig.get(1, referee.EvWrite), sig.get(1, referee.EvDone)
		once := sync.Once{}
		restart := func(*process) {
			once.Do(func() {
				unblock := make([]func(), len(holder.lock))
				for i := range holder.lock {
					unblock[i] = holder.block(i)
				}
				a.Restart(0)
				sig.fire(0, restarted)
				staged.Add(1)
				go func() {
					defer staged.Done()
					defer func() {
						for _, u := range unblock {
							u()
						}
					}()
					select {
					case <-settled:
					case <-wrote:
					case <-done:
					case <-rctx.Done():
					}
				}()
			})
		}
		a.mu.Lock()
		a.stage.restart = &armed{node: 0, buyer: holder.n, strike: restart}
		x := a.stage.restart
		a.mu.Unlock()
		under := sig.anchor() // buyer 1 is inside, or works, or is done
		staged.Add(1)
		go func() {
			defer staged.Done()
			select {
			case <-under:
			case <-rctx.Done():
				return
			}
			if a.lockCalls(holder) == 0 {
				a.mu.Lock()
				x.struck = true
				a.mu.Unlock()
				a.note("buyer 1's order takes no lock: the restart struck as it worked")
				restart(holder)
			}
		}()
	}
	r := &run{}
	if pl.race > 0 {
		holder.mu.Lock()
		holder.race = &unlockRace{gap: pl.race, freeze: 3 * a.t.TTL}
		holder.mu.Unlock()
	}
	var wg sync.WaitGroup
	var running sync.Map         // buyer → still ordering
	ready := make(chan struct{}) // buyers that start together wait here until all are spawned
	for i, b := range pl.buyers {
		p := procs[i]
		if b.fault != history.FaultNone {
			p.arm(b.fault)
		}
		if b.witness != 0 {
			p.witness, p.witnessCap = sig.get(b.witness, settled), b.witnessCap
		}
		var hold <-chan struct{}
		switch {
		case b.holdBy == -1:
			hold = sig.allBut(p.n, settled)
		case b.until == looked:
			hold = sig.looked(rctx, b.holdBy, cfg.Timing.TTL/4)
		case b.holdBy != 0:
			hold = sig.get(b.holdBy, b.until)
		case b.second:
			hold = sig.order(p.n, 2, settled)
			wg.Add(1)
			running.Store(p.n, true)
			go func() {
				defer wg.Done()
				select {
				case <-sig.order(p.n, 1, referee.EvEnter):
				case <-sig.order(p.n, 1, referee.EvDone):
				case <-rctx.Done():
					return
				}
				octx, ocancel := context.WithTimeout(rctx, 10*a.t.TTL)
				defer ocancel()
				a.order(octx, p, sig.order(p.n, 1, referee.EvDone))
			}()
		}
		wg.Add(1)
		running.Store(p.n, true)
		go func() {
			defer wg.Done()
			defer running.Delete(p.n)
			<-ready
			if i > 0 && !pl.together {
				anchor := sig.anchor()
				if b.anchor != "" {
					anchor = sig.get(0, b.anchor)
				}
				select {
				case <-anchor:
				case <-rctx.Done():
					return
				}
				if p.sleep(rctx, b.after) != nil {
					return
				}
			}
			if b.greedy {
				defer a.prio.close() // no more head starts once it stops ordering
			}
			for {
				octx, ocancel := context.WithTimeout(rctx, 10*a.t.TTL)
				err := a.order(octx, p, hold)
				ocancel()
				if !b.repeat || p.isDead() || rctx.Err() != nil || a.shelf() <= 0 {
					return
				}
				// Any unsuccessful order is tried again after a pause (a refusal, whatever
				// error value the step chose for it); the greedy buyer never pauses.
				if !b.greedy && err != nil && p.sleep(rctx, a.t.Work) != nil {
					return
				}
			}
		}()
	}
	close(ready)
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	timedOut := ""
	select {
	case <-finished:
	case <-rctx.Done():
		timedOut = fmt.Sprintf("the scenario ran past its deadline of %v", pl.deadline)
		if ctx.Err() != nil {
			timedOut = "the run was cancelled"
		}
		if !waitFor(finished, 2*a.t.TTL) {
			// Orders that ignore their context: kill their processes, so their commands
			// stop, and give them one more TTL to return.
			for _, p := range procs {
				p.crash()
			}
			waitFor(finished, a.t.TTL)
		}
		var still []string
		running.Range(func(k, _ any) bool {
			still = append(still, fmt.Sprint(k))
			return true
		})
		if len(still) > 0 {
			timedOut += "; buyers still ordering: " + strings.Join(still, ", ")
		}
	}
	cancel() // the staging ends with the run, before the report and before Close
	staged.Wait()
	if timedOut != "" {
		a.recordNow(history.Record{Kind: history.RecTimeout, What: timedOut})
	} else {
		// Did the scenario's fault strike? If not, say why: no verdict, or (no lock at all)
		// nothing for it to act on.
		if b := pl.buyers[0]; b.fault != history.FaultNone {
			a.faultFinish(holder, b.fault)
		}
		if pl.failover {
			a.nodeFaultFinish(a.stage.failover, holder, "failover")
		}
		if pl.restart {
			a.nodeFaultFinish(a.stage.restart, holder, "restart")
		}
		if pl.race == 1 {
			a.raceFinish(holder) // a later play's gap may not be there: the release went otherwise
		}
	}
	if pl.race > 0 {
		r.struck = a.frozeBefore(holder)
		a.mu.Lock()
		r.touched = a.unlockTouched
		a.mu.Unlock()
	}
	rep := a.Report(context.WithoutCancel(ctx))
	return rep, r, nil
}

// frozeBefore is the label of the command the unlock-race froze p before, "" if it did not.
func (a *Arena) frozeBefore(p *process) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, rec := range a.ref.History().Records {
		if rec.Kind == history.RecFault && rec.What == string(history.FaultUnlockRace) && rec.Buyer == p.n {
			return a.ref.CommandOf(rec.Cmds, rec.Node, rec.Call).Label
		}
	}
	return ""
}

// lacking is why cfg's step cannot be played on cfg's lock nodes, wrapping ErrCannotStage: a
// command it needs (Step.Needs) that a node's server does not run. It asks before anything is
// played, so a server without the command gives a reason, never a verdict: played anyway, its
// refusals would read as a lock that merely failed to unlock.
func lacking(ctx context.Context, cfg Config) error {
	if cfg.Step == nil || len(cfg.Step.Needs) == 0 {
		return nil
	}
	cmds := make([]string, len(cfg.Step.Needs))
	for i, n := range cfg.Step.Needs {
		cmds[i] = n.Command
	}
	for _, node := range cfg.Env.Nodes() {
		lacks, server, err := node.Lacks(ctx, cmds)
		if err != nil {
			return fmt.Errorf("sim: %s node: %w", node.Name(), err)
		}
		if len(lacks) == 0 {
			continue
		}
		var want []string
		for _, n := range cfg.Step.Needs {
			if slices.Contains(lacks, n.Command) {
				want = append(want, fmt.Sprintf("%s (%s)", n.Command, n.Since))
			}
		}
		it := "it"
		if len(want) > 1 {
			it = "them"
		}
		return fmt.Errorf("%w: %s needs %s, and the %s backend's %s node runs %s, which lacks %s",
			ErrCannotStage, cfg.Step.Slug, joinAnd(want), cfg.Env.Backend(), node.Name(), server, it)
	}
	return nil
}

// ErrCannotStage is Run's answer for a scenario the backend cannot play: a failover with no
// replica to promote, a restart of a server the lab does not own, a step whose commands the
// server does not run (Step.Needs). It is no verdict: a matrix shows the cell as skipped, with
// the reason.
var ErrCannotStage = errors.New("sim: the backend cannot stage this scenario")

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

// shelf is the stock as last written.
func (a *Arena) shelf() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ref.Shelf()
}

// signals turns events into channels a scripted scenario can wait on.
type signals struct {
	mu     sync.Mutex
	buyers int
	chans  map[[2]any]chan struct{}
	closed map[[2]any]bool
	count  map[referee.EventKind]map[int]bool // buyers that have given each signal
	alls   map[[2]any]chan struct{}           // (except, kind) → closes when every other buyer gave kind
}

func newSignals(buyers int) *signals {
	return &signals{buyers: buyers, chans: map[[2]any]chan struct{}{}, closed: map[[2]any]bool{},
		count: map[referee.EventKind]map[int]bool{}, alls: map[[2]any]chan struct{}{}}
}

func (s *signals) get(buyer int, k referee.EventKind) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chanLocked([2]any{buyer, k})
}

// order closes when the buyer's k-th order gives signal kind.
func (s *signals) order(buyer, k int, kind referee.EventKind) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chanLocked([2]any{[2]int{buyer, k}, kind})
}

func (s *signals) chanLocked(key [2]any) chan struct{} {
	c, ok := s.chans[key]
	if !ok {
		c = make(chan struct{})
		s.chans[key] = c
	}
	return c
}

// allBut closes once every buyer but except has given signal k.
func (s *signals) allBut(except int, k referee.EventKind) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]any{except, k}
	c, ok := s.alls[key]
	if !ok {
		c = make(chan struct{})
		s.alls[key] = c
		s.checkAll(except, k, c)
	}
	return c
}

func (s *signals) checkAll(except int, k referee.EventKind, c chan struct{}) {
	n := len(s.count[k])
	if s.count[k][except] {
		n--
	}
	if n >= s.buyers-1 {
		select {
		case <-c:
		default:
			close(c)
		}
	}
}

// fire gives a plan's own signal k (for buyer 0, the plan itself).
func (s *signals) fire(buyer int, k referee.EventKind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := [2]any{buyer, k}
	if !s.closed[key] {
		close(s.chanLocked(key))
		s.closed[key] = true
	}
}

// looked is a hold that lasts until the buyer has entered or finished, or for grace after it
// found the lock taken (settled); it ends with ctx.
const looked referee.EventKind = "looked"

// looked closes when buyer entered or finished, or grace after it settled, or when ctx ends.
func (s *signals) looked(ctx context.Context, buyer int, grace time.Duration) <-chan struct{} {
	c := make(chan struct{})
	entered, done, settledC := s.get(buyer, referee.EvEnter), s.get(buyer, referee.EvDone), s.get(buyer, settled)
	go func() {
		defer close(c)
		select {
		case <-entered:
			return
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-settledC:
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-entered:
		case <-done:
		case <-ctx.Done():
		case <-t.C:
		}
	}()
	return c
}

// anchor closes when the first buyer enters the critical section, begins its work, or finishes.
func (s *signals) anchor() <-chan struct{} { return s.get(1, "anchor") }

func (s *signals) see(e referee.Event) {
	switch e.Kind {
	case referee.EvEnter, referee.EvDone, referee.EvWaiting, referee.EvRefused, referee.EvWork, referee.EvWrite:
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fire := func(k referee.EventKind) {
		if e.Order != 0 {
			if key := [2]any{[2]int{e.Buyer, e.Order}, k}; !s.closed[key] {
				close(s.chanLocked(key))
				s.closed[key] = true
			}
		}
		key := [2]any{e.Buyer, k}
		if s.closed[key] {
			return
		}
		close(s.chanLocked(key))
		s.closed[key] = true
		if s.count[k] == nil {
			s.count[k] = map[int]bool{}
		}
		s.count[k][e.Buyer] = true
		for ak, c := range s.alls {
			if ak[1] == k {
				s.checkAll(ak[0].(int), k, c)
			}
		}
	}
	if e.Kind == referee.EvWrite {
		fire(referee.EvWrite) // the restart's hold-up of the holder ends at its write
		return
	}
	if e.Kind == referee.EvWork {
		// An order that works before it touches the stock (no lock, an atomic sale) is under
		// way from here: the others come while it works, as they would while it held a lock.
		if e.Buyer == 1 {
			fire("anchor")
		}
		return
	}
	fire(settled)
	if e.Kind == referee.EvWaiting || e.Kind == referee.EvRefused {
		return
	}
	fire(e.Kind)
	if e.Buyer == 1 {
		fire("anchor")
	}
}
