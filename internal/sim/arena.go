package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/durable"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// Config sets up an arena.
type Config struct {
	Step   *steps.Step
	Env    redisenv.Env
	Timing Timing
	Stock  int
	// OnEvent, when set, receives every event as it happens. It is called from the buyers'
	// goroutines, often with the referee's lock held: it must be safe for concurrent use and
	// return at once (hand the event to a queue). Events of one buyer arrive in order.
	OnEvent func(Event)
	// OnArena, when set, is given a scripted run's arena before its first buyer starts, so a
	// viewer can read the lock (Arena.Lock) from the same reading the referee uses. It must not
	// keep the arena past the run.
	OnArena func(*Arena)
}

// Arena is one run of one step: the shop's stock, the buyers' processes and the referee that sees
// everything. Scripted scenarios (Run) and the lab's live session (Live) both drive an Arena.
type Arena struct {
	step     *steps.Step
	env      redisenv.Env
	t        Timing
	lockKey  string
	stockKey string
	seqKey   string // the inventory's own order of the shop's commands: INCR in the same MULTI or script
	fenceKey string // the highest fencing token the inventory has seen
	start    time.Time
	onEvent  func(Event)
	inv      *redis.Client // uncounted: stocks the shelf, stamps, reads back
	nodes    []*nodeEye
	prio     *priority  // the greedy scenario's head start
	idle     *idleProbe // the allowance of each idle gap

	mu       sync.Mutex // guards the referee's state below, procs and the orders
	procs    []*process
	nextID   int    // the last order id handed out
	timedOut string // why a scripted run did not finish, if it did not
	asked    int64  // lock calls that have sent a first command, in the nodes' order
	ref      referee
}

// LockName is the product lock's key under a run's prefix: the lock of a run on env is
// env.Prefix() + LockName.
const LockName = "lock:product:1001"

// NewArena stocks the shelf and returns an arena ready for buyers.
func NewArena(ctx context.Context, cfg Config) (*Arena, error) {
	if cfg.Step == nil || cfg.Env == nil {
		return nil, errors.New("sim: an arena needs a step and an env")
	}
	if cfg.Timing == (Timing{}) {
		cfg.Timing = DefaultTiming()
	}
	pre := cfg.Env.Prefix()
	a := &Arena{
		step:     cfg.Step,
		env:      cfg.Env,
		t:        cfg.Timing,
		lockKey:  pre + LockName,
		stockKey: pre + "stock:product:1001",
		seqKey:   pre + "stock:product:1001:seq",
		fenceKey: pre + "stock:product:1001:fence",
		onEvent:  cfg.OnEvent,
		start:    time.Now(),
		prio:     newPriority(),
	}
	a.inv = redis.NewClient(cfg.Env.InventoryOptions())
	if err := a.inv.Set(ctx, a.stockKey, cfg.Stock, 0).Err(); err != nil {
		a.inv.Close()
		return nil, fmt.Errorf("sim: stocking the shelf: %w", err)
	}
	a.ref = newReferee(cfg.Stock)
	a.ref.waits.grace = cfg.Timing.TTL / 80
	for i, n := range cfg.Env.Nodes() {
		w, err := n.Watch(a.lockKey)
		if err != nil {
			// The run goes on; what depends on watching the lock goes unjudged, and says so.
			w = blindWatcher{err}
			a.ref.blind(steps.ForeignRelease, fmt.Sprintf("the referee cannot watch the lock on %s: %v", n.Name(), err))
		}
		a.nodes = append(a.nodes, &nodeEye{i: i, node: n, w: w, owners: map[string]int{}, turn: durable.New()})
	}
	a.idle = newIdleProbe(a, a.nodes[0])
	a.ref.waits.kick = a.idle.kick
	return a, nil
}

// LockKey is the key of the product's lock.
func (a *Arena) LockKey() string { return a.lockKey }

// Timing is the arena's clock.
func (a *Arena) Timing() Timing { return a.t }

// Since is the arena's time now.
func (a *Arena) Since() time.Duration { return time.Since(a.start) }

// unlockFreeze is how long the unlock-race fault freezes a process in a live session: past its
// lock's TTL.
func (a *Arena) unlockFreeze() time.Duration { return a.t.TTL * 9 / 5 }

// beat is how long a staged fault lasts once its counterpart has acted: one Work, long enough
// for the overlap it was staged for to be seen, short against the counterpart's own lease (whose
// expiry is the one clock no staging can hold).
func (a *Arena) beat() time.Duration { return a.t.Work }

// holdCap is the longest a held buyer stays inside past its work, waiting for its counterpart.
func (a *Arena) holdCap() time.Duration { return 2 * a.t.TTL }

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

// order runs one order of p through the step's handler and reports it to the referee.
func (a *Arena) order(ctx context.Context, p *process, hold <-chan struct{}) error {
	a.mu.Lock()
	a.nextID++
	p.orders++
	o := &order{id: a.nextID, p: p, k: p.orders, began: a.Since()}
	p.current = append(p.current, o)
	a.ref.orders = append(a.ref.orders, o)
	a.mu.Unlock()
	a.emit(Event{Kind: EvStart, Buyer: p.n, Order: o.k})
	err := a.step.Order(withOrder(ctx, o), p.locker, &shop{p: p, o: o, hold: hold})
	a.done(o, err)
	return err
}

// emit timestamps e and hands it to the subscriber. Callers may hold a.mu.
func (a *Arena) emit(e Event) {
	e.At = time.Since(a.start)
	if a.onEvent != nil {
		a.onEvent(e)
	}
}

// count counts commands of p (the probe's are not counted) and tells the subscriber what they were.
func (a *Arena) count(p *process, cmds []redis.Cmder, node int) {
	a.countN(p, len(cmds), a.label(cmds, node))
}

func (a *Arena) countN(p *process, n int, label string) {
	if p.n == 0 {
		return
	}
	a.mu.Lock()
	a.ref.commands += n
	if a.ref.commands > steps.FloodLimit*(a.ref.confirmed+1) {
		a.ref.announce(a, steps.Flood, floodSentence(a.ref.commands, a.ref.confirmed))
	}
	a.mu.Unlock()
	if a.onEvent != nil {
		a.emit(Event{Kind: EvCommand, Buyer: p.n, Detail: label})
	}
}

// label names commands the way the timeline shows them: "SET NX lock", "GET stock",
// "EVALSHA lock"; a pipeline's are joined with " + ".
func (a *Arena) label(cmds []redis.Cmder, node int) string {
	parts := make([]string, 0, len(cmds))
	for _, cmd := range cmds {
		name := strings.ToUpper(cmd.Name())
		for _, x := range cmd.Args()[1:] {
			if s, ok := x.(string); ok && strings.EqualFold(s, "nx") {
				name += " NX"
			}
		}
		switch {
		case touches(cmd, a.lockKey):
			name += " lock"
		case touches(cmd, a.stockKey):
			name += " stock"
		default:
			name += " (lock server)"
		}
		if len(a.nodes) > 1 {
			name += fmt.Sprintf(" @%d", node+1)
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, " + ")
}

// stamp takes the inventory's next sequence number: a moment in the inventory's own order, for an
// event that is not one of its commands (a handler returned, an unlock began, a process died).
func (a *Arena) stamp() int64 {
	n, err := a.inv.Incr(context.Background(), a.seqKey).Result()
	if err != nil {
		return 0
	}
	return n
}

// crashed ends every order p had under way, as far as the shop is concerned.
func (a *Arena) crashed(p *process) {
	seq := a.stamp()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range p.current {
		a.ref.leave(a, o, seq, false)
		a.ref.released(a, o)
	}
}

// done ends o: it leaves the critical section if it was still inside without having written,
// and an order that sold nothing and never got in while units remained is a lost sale.
func (a *Arena) done(o *order, err error) {
	a.closeSpan(o)
	p := o.p
	a.mu.Lock()
	defer a.mu.Unlock()
	o.done = true
	p.lastDone = a.Since()
	a.ref.released(a, o)
	for i, x := range p.current {
		if x == o {
			p.current = append(p.current[:i:i], p.current[i+1:]...)
			break
		}
	}
	if !o.entered() && o.confirmed == 0 && !o.faulted && !p.isDead() && p.ctx.Err() == nil {
		a.ref.rejected(a, o)
	}
	detail := "ok"
	if err != nil {
		detail = strings.ReplaceAll(err.Error(), "\n", "; ")
		if o.confirmed > 0 {
			detail = "sold, but " + detail
		}
	} else if o.confirmed == 0 {
		detail = "ok, but sold nothing"
	}
	a.emit(Event{Kind: EvDone, Buyer: p.n, Order: o.k, Detail: detail})
}

// closeSpan ends o's critical section at this moment of the inventory's order, unless it has
// written (its write ended it) or has not entered.
func (a *Arena) closeSpan(o *order) {
	a.mu.Lock()
	open := o.entered() && o.endSeq == 0
	a.mu.Unlock()
	if !open {
		return
	}
	seq := a.stamp()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.leave(a, o, seq, false)
}

// Holder is the buyer inside the critical section (the first in, if several are), or else the
// lock's owner on the first node; 0 if there is none.
func (a *Arena) Holder() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if o := a.ref.firstInside(); o != nil {
		return o.p.n
	}
	return max(a.nodes[0].owner(), 0)
}

func (a *Arena) proc(n int) *process {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n < 1 || n > len(a.procs) {
		return nil
	}
	return a.procs[n-1]
}

// Inject plays fault on the current holder: at once where it can (crash), in its work if it is
// working (error, slow, reentrant), or at its next moment (pause at its stock write, unlock-race
// at its unlock). A failover is armed for the next lock write, whoever makes it. It returns the
// buyer it targeted (0 for a failover).
func (a *Arena) Inject(f Fault) (int, error) {
	if f == FaultFailover {
		return 0, a.armFailover(0)
	}
	n := a.Holder()
	p := a.proc(n)
	if p == nil {
		return 0, ErrNoHolder
	}
	switch f {
	case FaultSecond:
		return 0, errors.New("sim: a second request needs a live session")
	case FaultCrash:
		a.emit(Event{Kind: EvFault, Buyer: n, Detail: "crash: the process dies"})
		p.crash()
	default:
		p.arm(f)
	}
	return n, nil
}

// Report judges the run so far for scenario sc (its judged kinds become the violations), reading
// the final stock from the inventory.
func (a *Arena) Report(ctx context.Context, sc steps.Scenario) *Report {
	a.mu.Lock()
	timedOut := a.timedOut
	a.mu.Unlock()
	st := stuckState{detail: "the run did not finish"}
	if timedOut == "" {
		st = a.probe(ctx)
	}
	a.idle.settle(a.t.TTL)
	final, err := a.inv.Get(ctx, a.stockKey).Int()
	if err != nil {
		final = -1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ref.report(a, sc, final, st, timedOut)
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
	ctx := context.Background()
	a.inv.Del(ctx, a.stockKey, a.seqKey, a.fenceKey)
	for _, e := range a.nodes {
		e.node.Admin().Del(ctx, a.lockKey)
	}
	a.closeNodes()
	a.inv.Close()
}

func (a *Arena) closeNodes() {
	for _, e := range a.nodes {
		e.w.Close()
	}
}
