package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

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
}

// Arena is one run of one step: the shop's stock, the buyers' processes and the referee that sees
// everything. Scripted scenarios (Run) and the lab's live session (Live) both drive an Arena.
type Arena struct {
	step     *steps.Step
	env      redisenv.Env
	t        Timing
	lockKey  string
	stockKey string
	start    time.Time
	onEvent  func(Event)
	inv      *redis.Client // uncounted: sets up and reads back the stock

	lockMu        sync.Mutex // serialises lock commands with the owner tracking around them
	failoverArmed bool       // guarded by lockMu

	mu    sync.Mutex // guards the referee's state below and procs
	procs []*process
	ref   referee
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
	a := &Arena{
		step:     cfg.Step,
		env:      cfg.Env,
		t:        cfg.Timing,
		lockKey:  cfg.Env.Prefix() + LockName,
		stockKey: cfg.Env.Prefix() + "stock:product:1001",
		onEvent:  cfg.OnEvent,
		start:    time.Now(),
	}
	a.inv = redis.NewClient(cfg.Env.InventoryOptions())
	if err := a.inv.Set(ctx, a.stockKey, cfg.Stock, 0).Err(); err != nil {
		a.inv.Close()
		return nil, fmt.Errorf("sim: stocking the shelf: %w", err)
	}
	a.ref = newReferee(cfg.Stock)
	return a, nil
}

// LockKey is the key of the product's lock.
func (a *Arena) LockKey() string { return a.lockKey }

// Timing is the arena's clock.
func (a *Arena) Timing() Timing { return a.t }

// Since is the arena's time now.
func (a *Arena) Since() time.Duration { return time.Since(a.start) }

// unlockFreeze is how long the unlock-race fault freezes a process: past its lock's TTL.
func (a *Arena) unlockFreeze() time.Duration { return a.t.TTL * 9 / 5 }

// holdCap is the longest a held buyer stays inside past its work: it ends well within its own TTL.
func (a *Arena) holdCap() time.Duration { return a.t.TTL * 4 / 5 }

// addBuyer starts a new process; hold, when not nil, keeps its work inside until it closes.
func (a *Arena) addBuyer() *process {
	a.mu.Lock()
	p := newProcess(a, len(a.procs)+1)
	a.procs = append(a.procs, p)
	a.mu.Unlock()
	return p
}

// order runs one order of p through the step's handler and reports it to the referee.
func (a *Arena) order(ctx context.Context, p *process, hold <-chan struct{}) error {
	p.mu.Lock()
	p.wrote = false
	p.order++
	p.mu.Unlock()
	a.emit(Event{Kind: EvStart, Buyer: p.n})
	err := a.step.Order(ctx, p.locker, &shop{p: p, hold: hold})
	a.done(p, err)
	return err
}

// emit timestamps e, feeds the referee's log and the subscriber. Callers may hold a.mu.
func (a *Arena) emit(e Event) {
	e.At = time.Since(a.start)
	if a.onEvent != nil {
		a.onEvent(e)
	}
}

// command counts one Redis command of p and tells the subscriber what it was.
func (a *Arena) command(p *process, cmd redis.Cmder, lock bool) {
	a.mu.Lock()
	a.ref.commands++
	if a.ref.commands > steps.FloodLimit*(a.ref.confirmed+1) {
		a.ref.announce(a, steps.Flood, floodSentence(a.ref.commands, a.ref.confirmed))
	}
	a.mu.Unlock()
	if a.onEvent != nil {
		a.emit(Event{Kind: EvCommand, Buyer: p.n, Detail: a.label(cmd, lock)})
	}
}

// label names a command the way the timeline shows it: "SET NX lock", "GET stock", "EVALSHA lock".
func (a *Arena) label(cmd redis.Cmder, lock bool) string {
	args := cmd.Args()
	name := strings.ToUpper(cmd.Name())
	for _, x := range args[1:] {
		if s, ok := x.(string); ok && strings.EqualFold(s, "nx") {
			name += " NX"
		}
	}
	switch {
	case touches(cmd, a.lockKey):
		return name + " lock"
	case touches(cmd, a.stockKey):
		return name + " stock"
	case lock:
		return name + " (lock server)"
	}
	return name
}

// trackLock runs one lock-server command of p with the lock's value read before and after it, so
// the referee knows who created the lock, who changed it and who deleted it. It is also where an
// armed failover holds the replication back before a lock is written, and fails over right after.
//
// Hazard: a lock can expire in the instant between the read and the command. The referee then
// sees the value change hands (not "still held") and reads a DEL or script that answered 0 as
// deleting nothing, so an expiry is never mistaken for a takeover or a foreign release.
func (a *Arena) trackLock(ctx context.Context, p *process, cmd redis.Cmder, next redis.ProcessHook) error {
	a.lockMu.Lock()
	defer a.lockMu.Unlock()
	vb, before, err := a.env.Value(ctx, a.lockKey)
	if err != nil {
		return next(ctx, cmd)
	}
	a.mu.Lock()
	if !before && a.ref.owner != 0 {
		a.emit(Event{Kind: EvExpired, Other: a.ref.owner})
		a.ref.owner = 0
	}
	a.mu.Unlock()
	if !before && a.failoverArmed {
		a.env.HoldReplication()
	}
	err = next(ctx, cmd)
	va, after, xerr := a.env.Value(ctx, a.lockKey)
	if xerr != nil {
		return err
	}
	a.mu.Lock()
	owner := a.ref.owner
	switch {
	case after && (!before || va != vb) && owner != p.n:
		if before && owner != 0 {
			// The value changed hands under one command: the old lock expired first.
			a.emit(Event{Kind: EvExpired, Other: owner})
		}
		a.ref.owner = p.n
		a.emit(Event{Kind: EvAcquired, Buyer: p.n})
	case before && !after && deletedNothing(cmd):
		// It expired just before this command, which found nothing to delete.
		a.ref.owner = 0
		if owner != 0 {
			a.emit(Event{Kind: EvExpired, Other: owner})
		}
	case before && !after && owner == p.n:
		a.ref.owner = 0
		a.emit(Event{Kind: EvReleased, Buyer: p.n})
	case before && !after:
		a.ref.foreignRelease(a, p.n)
	case before && after && va == vb && owner != p.n && a.ref.waits[p.n] != p.order:
		a.ref.waits[p.n] = p.order
		a.emit(Event{Kind: EvWaiting, Buyer: p.n, Other: owner})
	}
	if before && !after {
		// A process that deletes the lock has left its critical section, even if its handler
		// has not returned yet: the next holder may enter before it does.
		a.ref.exit(a, p.n)
	}
	a.mu.Unlock()
	if !before && after && a.failoverArmed {
		a.failoverArmed = false
		a.failover(ctx)
	}
	return err
}

// deletedNothing reports whether cmd answered the integer 0, as DEL and a compare-and-delete
// script do when there was nothing of theirs to delete.
func deletedNothing(cmd redis.Cmder) bool {
	switch c := cmd.(type) {
	case *redis.IntCmd:
		return c.Err() == nil && c.Val() == 0
	case *redis.Cmd:
		n, err := c.Int64()
		return err == nil && n == 0
	}
	return false
}

// failover kills the lock primary and promotes the replica; the caller holds lockMu.
func (a *Arena) failover(ctx context.Context) {
	if err := a.env.Failover(ctx); err != nil {
		a.emit(Event{Kind: EvFailover, Detail: "failed: " + err.Error()})
		return
	}
	_, still, _ := a.env.Value(ctx, a.lockKey)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.failedOver = true
	a.emit(Event{Kind: EvFailover, Detail: "the lock primary died; the replica, which never saw the last lock write, is primary now"})
	if !still && a.ref.owner != 0 {
		a.emit(Event{Kind: EvLost, Other: a.ref.owner})
		a.ref.owner = 0
	}
}

// armFailover makes the next lock write skip the replica, and fails over right after it.
func (a *Arena) armFailover() error {
	if !a.env.CanFailover() {
		return fmt.Errorf("sim: the %s backend has no replica to fail over to", a.env.Backend())
	}
	a.lockMu.Lock()
	defer a.lockMu.Unlock()
	a.mu.Lock()
	done := a.ref.failedOver
	a.mu.Unlock()
	if done {
		return errors.New("sim: the replica was already promoted; reset to fail over again")
	}
	a.failoverArmed = true
	return nil
}

func (a *Arena) enter(p *process, stock int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.enter(a, p.n, stock)
}

func (a *Arena) write(p *process, stock int) {
	p.mu.Lock()
	p.wrote = true
	p.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.write(a, p.n, stock)
}

func (a *Arena) exit(p *process) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.exit(a, p.n)
}

func (a *Arena) reentryFailed(p *process, why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.reentryFailed(a, p.n, why)
}

// done ends p's order: it leaves the critical section, and a refusal while stock remained is a
// lost sale.
func (a *Arena) done(p *process, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ref.exit(a, p.n)
	refused := errors.Is(err, steps.ErrBusy) ||
		(!a.ref.entered(p.n, p.order) && errors.Is(err, context.DeadlineExceeded))
	if refused && !p.isDead() {
		a.ref.rejected(a, p.n)
	}
	detail := "ok"
	if err != nil {
		detail = strings.ReplaceAll(err.Error(), "\n", "; ")
		p.mu.Lock()
		if p.wrote {
			detail = "sold, but " + detail
		}
		p.mu.Unlock()
	}
	a.emit(Event{Kind: EvDone, Buyer: p.n, Detail: detail})
}

// Holder is the buyer inside the critical section (the first in, if several are), or else the
// lock's owner; 0 if there is none.
func (a *Arena) Holder() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n := a.ref.firstInside(); n != 0 {
		return n
	}
	return a.ref.owner
}

func (a *Arena) proc(n int) *process {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n < 1 || n > len(a.procs) {
		return nil
	}
	return a.procs[n-1]
}

// Inject plays fault on the current holder at once where it can (crash, pause), in its work if it
// is working (error, slow, reentrant), or at its next moment (unlock-race). A failover is armed
// for the next lock write, whoever makes it. It returns the buyer it targeted (0 for a failover).
func (a *Arena) Inject(f Fault) (int, error) {
	if f == FaultFailover {
		return 0, a.armFailover()
	}
	n := a.Holder()
	p := a.proc(n)
	if p == nil {
		return 0, ErrNoHolder
	}
	switch f {
	case FaultCrash:
		a.emit(Event{Kind: EvFault, Buyer: n, Detail: "crash: the process dies"})
		p.crash()
	case FaultPause:
		a.emit(Event{Kind: EvFault, Buyer: n, Detail: "pause: the process stops the world for 3 × TTL"})
		p.freeze(3 * a.t.TTL)
	default:
		p.arm(f)
	}
	return n, nil
}

// Report judges the run so far for scenario sc (its judged kinds become the violations), reading
// the final stock and the lock from Redis.
func (a *Arena) Report(ctx context.Context, sc steps.Scenario) *Report {
	final, err := a.inv.Get(ctx, a.stockKey).Int()
	if err != nil {
		final = -1
	}
	_, held, _ := a.env.Value(ctx, a.lockKey)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ref.report(a, sc, final, held)
}

// Close stops every process and removes the run's keys. Its caller has waited for the orders.
func (a *Arena) Close() {
	a.mu.Lock()
	procs := a.procs
	a.mu.Unlock()
	for _, p := range procs {
		p.close()
	}
	ctx := context.Background()
	a.inv.Del(ctx, a.stockKey)
	a.env.Admin().Del(ctx, a.lockKey)
	a.inv.Close()
}
