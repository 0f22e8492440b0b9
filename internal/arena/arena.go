package arena

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/durable"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Config sets up an arena.
type Config struct {
	Step *steps.Step
	// Scenario names what is played ("" for a live session), What says it in one sentence, and
	// Judged is the kinds it is judged for: the history carries them, and the referee reads them
	// there.
	Scenario steps.Scenario
	What     string
	Judged   []steps.Kind
	// Play is the play's number where a scenario plays several (unlock-race), from 1.
	Play   int
	Env    redisenv.Env
	Timing history.Timing
	Stock  int
	// OnEvent, when set, receives every event as it happens. It is called from the buyers'
	// goroutines, often with the arena's lock held: it must be safe for concurrent use and return
	// at once (hand the event to a queue). Events of one buyer arrive in order.
	OnEvent func(referee.Event)
	// OnArena, when set, is given a scripted run's arena before its first buyer starts, so a
	// viewer can read the lock (Arena.Lock) from the same reading the referee uses. It must not
	// keep the arena past the run.
	OnArena func(*Arena)
	// WatchStalls has a run of the embedded backend on the wall clock watch how long the machine
	// stalls it, as every run on a real server does (stallWatch): a caller that plays a stalled
	// run again (scenario.Steady) sets it; the terminal lab, which people watch, does not.
	WatchStalls bool
	// Gate, when set, holds every command of a buyer as it leaves its process, until a driver
	// lets it go (a drive session: the learner is the scheduler). Nil: commands go at once.
	Gate Gate
}

// Arena is one run of one step: the shop's stock, the buyers' processes, the history of everything
// they did, and the referee that reads it as it grows. Scripted scenarios (Run) and the lab's live
// session (Live) both drive an Arena.
type Arena struct {
	step     *steps.Step
	play     int
	env      redisenv.Env
	t        history.Timing
	prefix   string
	lockKey  string // the shop's lock key, with the prefix
	stockKey string
	seqKey   string // the inventory's own order of the shop's commands: INCR in the same MULTI or script
	fenceKey string // the highest fencing token the inventory has seen
	start    time.Time
	onEvent  func(referee.Event)
	inv      *redis.Client // the lab's own: stocks the shelf, stamps, reads back
	nodes    []*nodeEye
	prio     *priority   // the greedy scenario's head start
	idle     *idleProbe  // the allowance of each idle gap
	stalls   *stallWatch // on the wall clock: how long the machine stalled the run
	gate     Gate        // a drive session's (Config.Gate), or nil
	virtual  bool        // the run plays in a testing/synctest bubble (VirtualClock)

	mu        sync.Mutex // guards what follows, procs and the orders
	procs     []*process
	nextOrder int              // the last order id handed out
	nextCall  int              // the last call id handed out
	ref       *referee.Referee // fed every record (record); asked only for the history and the verdict
	// live is what the stage asks while the run plays (who is inside, who holds, the shelf): the
	// records' facts, never a verdict (referee.Live), so a change to judging cannot change how a
	// scenario plays.
	live      referee.Live
	sig       *signals  // the events as channels, for the stages' waits
	armed     []armedOn // node moves waiting for a holder's Lock
	handsOver bool      // a Lock was handed the lock another process wrote for it (a fair queue)
	// unlockTouched is the most commands an Unlock call (of any process, begun holding a lock)
	// carried out that touched the lock: the gaps the unlock-race tries.
	unlockTouched int
	// outside says the first key outside the run's prefix a process's command wrote (the run's
	// own part of it elided), and whose command it was: "" while none.
	outside string
}

// LockName is the product lock's key under a run's prefix: the lock of a run on env is
// env.Prefix() + LockName.
const LockName = "lock:product:1001"

// inventoryKeys is the part of the run's prefix the inventory's keys live under: not a lock's (on
// a backend whose inventory shares the lock's server, the watchers leave them alone).
const inventoryKeys = "inventory:"

// NewArena stocks the shelf and returns an arena ready for buyers.
func NewArena(ctx context.Context, cfg Config) (*Arena, error) {
	if cfg.Step == nil || cfg.Env == nil {
		return nil, errors.New("arena: an arena needs a step and an env")
	}
	if cfg.Timing == (history.Timing{}) {
		cfg.Timing = history.DefaultTiming()
	}
	pre := cfg.Env.Prefix()
	a := &Arena{
		step:     cfg.Step,
		play:     cfg.Play,
		env:      cfg.Env,
		t:        cfg.Timing,
		prefix:   pre,
		lockKey:  pre + LockName,
		stockKey: pre + inventoryKeys + "stock:product:1001",
		seqKey:   pre + inventoryKeys + "stock:product:1001:seq",
		fenceKey: pre + inventoryKeys + "stock:product:1001:fence",
		onEvent:  cfg.OnEvent,
		start:    time.Now(),
		virtual:  VirtualClock(time.Now()),
		prio:     newPriority(len(cfg.Env.Nodes()), 4*cfg.Timing.TTL),
		sig:      newSignals(),
		gate:     cfg.Gate,
	}
	o := cfg.Env.InventoryOptions()
	a.inv = redis.NewClient(o)
	a.inv.AddHook(claimHook{})
	if err := a.inv.Set(ctx, a.stockKey, cfg.Stock, 0).Err(); err != nil {
		a.inv.Close()
		return nil, fmt.Errorf("arena: stocking the shelf: %w", err)
	}
	h := history.History{Format: history.Version, Step: cfg.Step.Slug, Scenario: cfg.Scenario, What: cfg.What, Judged: cfg.Judged, Play: cfg.Play,
		Backend: cfg.Env.Backend(), Timing: cfg.Timing, LockKey: LockName, Stock: cfg.Stock, NoLock: cfg.Step.NoLock}
	for _, n := range cfg.Env.Nodes() {
		h.Nodes = append(h.Nodes, n.Name())
	}
	a.ref = referee.NewReferee(h, a.emit)
	a.live = a.ref.Live()
	for i, n := range cfg.Env.Nodes() {
		w, err := n.Watch(pre, inventoryKeys)
		if err != nil {
			// The run goes on; what depends on watching the lock goes unjudged, and says so.
			w = blindWatcher{err}
			a.record(history.Record{Kind: history.RecBlind, What: fmt.Sprintf("the referee cannot watch %s: %v", n.Name(), err), Kinds: []steps.Kind{steps.ForeignRelease, steps.ForeignRenewal}})
		}
		a.nodes = append(a.nodes, &nodeEye{i: i, node: n, w: w, turn: durable.New()})
	}
	a.idle = newIdleProbe(a, a.nodes[0])
	if !VirtualClock(a.start) && (cfg.Env.Backend() != "embedded" || cfg.WatchStalls) {
		a.stalls = watchStalls(a.inv, a.start)
	}
	return a, nil
}

// LockKey is the key of the product's lock.
func (a *Arena) LockKey() string { return a.lockKey }

// Play is the play's number where the scenario plays several (Config.Play), 0 otherwise.
func (a *Arena) Play() int { return a.play }

// Timing is the arena's clock.
func (a *Arena) Timing() history.Timing { return a.t }

// Since is the arena's time now.
func (a *Arena) Since() time.Duration { return time.Since(a.start) }

// at is t on the arena's clock.
func (a *Arena) at(t time.Time) time.Duration { return t.Sub(a.start) }

// beat is how long a staged fault lasts once its counterpart has acted: one Work, long enough
// for the overlap it was staged for to be seen, short against the counterpart's own lease (whose
// expiry is the one clock no staging can hold).
func (a *Arena) beat() time.Duration { return a.t.Work }

// holdCap is the longest a held buyer stays inside past its work, waiting for its counterpart.
func (a *Arena) holdCap() time.Duration { return 2 * a.t.TTL }

// record appends rec to the run's history, stamped now unless it has a time, and lets the
// referee read it (it emits the events). The caller holds a.mu.
func (a *Arena) record(rec history.Record) {
	if rec.At == 0 {
		rec.At = a.Since()
	}
	a.ref.Add(rec)
}

// recordNow is record for a caller that does not hold a.mu.
func (a *Arena) recordNow(rec history.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(rec)
}

// emit hands e to the subscriber, and to the stage if it is a fact (referee.Event.Staging): the
// stage's waits, and the idle probe when the lock comes free. Callers hold a.mu.
func (a *Arena) emit(e referee.Event) {
	if e.Staging() { // a finding of the referee's checkers is never one: the stage never waits on it
		a.stage(e)
	}
	if a.onEvent != nil {
		a.onEvent(e)
	}
}

// stage takes a fact the referee read. Hazard: a free the referee learns of late (a rewrite to
// "free" it takes for the release once the next Lock took the lock) has no moment left to probe:
// its gap has the grace alone.
func (a *Arena) stage(e referee.Event) {
	if e.Kind == referee.EvFree && a.idle != nil && e.Due >= e.At {
		a.idle.kick(e.Due)
	}
	if e.Kind == referee.EvAcquired && e.Handed {
		a.handsOver = true
	}
	a.sig.see(e, len(a.procs))
}

// addBuyer starts a new process.
func (a *Arena) addBuyer() *process {
	a.mu.Lock()
	n := len(a.procs) + 1
	a.mu.Unlock()
	p := newProcess(a, n)
	a.mu.Lock()
	a.procs = append(a.procs, p)
	a.mu.Unlock()
	return p
}

// order runs one order of p through the step's handler and records it.
func (a *Arena) order(ctx context.Context, p *process, pl orderPlan) error {
	a.mu.Lock()
	a.nextOrder++
	p.orders++
	o := &order{id: a.nextOrder, p: p, k: p.orders, hold: pl.hold, atLeast: min(pl.atLeast, a.holdCap()), holdFor: a.holdCap()}
	if pl.holdFor > 0 {
		o.holdFor = min(pl.holdFor, a.holdCap())
	}
	for _, st := range p.holds {
		if st.k == o.k {
			o.hold = st.w
		}
	}
	p.current = append(p.current, o)
	a.record(history.Record{Kind: history.RecOrder, What: history.OrderBegin, Buyer: p.n, Order: o.id, K: o.k})
	a.mu.Unlock()
	var err error
	p.ours(func() { err = p.order(withOrder(ctx, o), p.locker, &shop{p: p, o: o}) })
	a.done(o, ctx, err)
	return err
}

// done records the end of o.
func (a *Arena) done(o *order, ctx context.Context, err error) {
	p := o.p
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, x := range p.current {
		if x == o {
			p.current = append(p.current[:i:i], p.current[i+1:]...)
			break
		}
	}
	rec := history.Record{Kind: history.RecOrder, What: history.OrderEnd, Buyer: p.n, Order: o.id}
	if err != nil {
		rec.Err = strings.ReplaceAll(err.Error(), "\n", "; ")
	}
	switch {
	case o.faulted:
		rec.Excuse = history.ExcuseFault
	case p.isDead():
		rec.Excuse = history.ExcuseDead
	case p.ctx.Err() != nil || ctx.Err() != nil:
		rec.Excuse = history.ExcuseCut
	}
	a.record(rec)
}

// crashed records that p died.
func (a *Arena) crashed(p *process) {
	a.recordNow(history.Record{Kind: history.RecProcess, What: history.ProcessCrashed, Buyer: p.n})
}

// Holder is the buyer inside the critical section (the first in, if several are), or else the
// buyer of the first lock held; 0 if there is none, or if it is in its Unlock (Stage.Holder).
func (a *Arena) Holder() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h := a.live.Inside(); h != 0 && !a.live.Releasing(h) {
		return h
	}
	return 0
}

func (a *Arena) proc(n int) *process {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n < 1 || n > len(a.procs) {
		return nil
	}
	return a.procs[n-1]
}

// TimedOut records that the run did not finish: what says how.
func (a *Arena) TimedOut(what string) {
	a.recordNow(history.Record{Kind: history.RecTimeout, What: what})
}

// SoldOut reports whether buyers should stop ordering (referee.Live.SoldOut).
func (a *Arena) SoldOut() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live.SoldOut()
}

// History is the run so far, as data.
func (a *Arena) History() *history.History {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ref.History()
}

// Report judges the run so far for the kinds its history is judged for (Config.Judged; every kind
// in a live session). It probes the lock for stuck, reads the final stock back, and records both
// first.
func (a *Arena) Report(ctx context.Context) *referee.Report {
	a.mu.Lock()
	timedOut := a.live.NoVerdict()
	a.mu.Unlock()
	if !timedOut {
		a.probe(ctx)
	}
	a.idle.settle(a.t.TTL)
	final, err := a.inv.Get(ctx, a.stockKey).Int()
	if err != nil {
		final = -1
	}
	for _, s := range a.env.Strangers(ctx) {
		a.recordNow(history.Record{Kind: history.RecBlind, What: s + ": use the client the lab gives you (Proc.Redis, Proc.Nodes)", Kinds: steps.Kinds})
	}
	if rec, ok := a.stalls.blind(a.t.TTL / 4); ok {
		a.recordNow(rec)
	}
	a.noteStrays()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.record(history.Record{Kind: history.RecFinal, Stock: final})
	return a.ref.Report()
}

// Close stops every process and removes the run's keys. Its caller has waited for the orders.
func (a *Arena) Close() {
	a.mu.Lock()
	procs := a.procs
	a.mu.Unlock()
	for _, p := range procs {
		p.close()
	}
	a.prio.close()
	a.idle.close()
	a.stalls.close()
	a.endStrays()
	ctx := context.Background()
	a.inv.Del(ctx, a.stockKey, a.seqKey, a.fenceKey)
	for _, e := range a.nodes {
		// The next run on this env (another play of the scenario) starts with no key of this one.
		if keys, err := e.node.Admin().Keys(ctx, a.prefix+"*").Result(); err == nil && len(keys) > 0 {
			e.node.Admin().Del(ctx, keys...)
		}
		e.w.Close()
	}
	a.inv.Close()
}

// claimHook claims every connection its client dials: a client of the lab's own.
type claimHook struct{}

func (claimHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			redisenv.Claim(c)
		}
		return c, err
	}
}
func (claimHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (claimHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
