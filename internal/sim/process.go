package sim

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// process is one simulated buyer process: its own Redis clients, its own Locker, its goroutines.
// Every command it sends passes its hook, which is where freezes, crashes and the simulated network
// act. Hazard: Go cannot kill a goroutine, so a crashed process's code may still run; the hook makes
// sure none of it reaches Redis.
type process struct {
	a      *Arena
	n      int
	name   string
	lock   *redis.Client
	inv    *redis.Client
	locker steps.Locker
	ctx    context.Context // ends when the process dies
	kill   context.CancelFunc
	dead   chan struct{}
	wg     sync.WaitGroup // goroutines started through Proc.Go

	mu     sync.Mutex
	gate   chan struct{} // closed while the process runs; open while it is frozen
	thawAt time.Time
	armed  Fault         // a fault waiting for its moment
	poke   chan struct{} // wakes the work when a fault is injected into it
	inWork bool
	wrote  bool // the current order has written the stock: its next delete is the unlock
	order  int  // orders started

	// witness, set by a scripted scenario, closes when the buyer its fault is staged for has
	// entered the critical section, found the lock taken, or finished. A slow, paused or frozen
	// holder is not back before that (or before witnessCap after its fault began), so the
	// interleaving a scenario forces does not depend on how fast the machine runs.
	witness    <-chan struct{}
	witnessCap time.Duration
}

func newProcess(a *Arena, n int) *process {
	p := &process{a: a, n: n, name: "buyer-" + strconv.Itoa(n), dead: make(chan struct{}), poke: make(chan struct{}, 1)}
	p.gate = make(chan struct{})
	close(p.gate)
	p.ctx, p.kill = context.WithCancel(context.Background())
	lo := a.env.LockOptions()
	lo.MaxRetries = 3
	p.lock = redis.NewClient(lo)
	p.lock.AddHook(hook{p: p, lock: true})
	if h := a.env.LockHook(); h != nil {
		p.lock.AddHook(h)
	}
	p.inv = redis.NewClient(a.env.InventoryOptions())
	p.inv.AddHook(hook{p: p})
	p.locker = a.step.New(steps.Proc{ID: p.name, Redis: p.lock, TTL: a.t.TTL, Go: p.spawn})
	return p
}

// spawn is Proc.Go: the goroutine belongs to the process and ends with it.
func (p *process) spawn(f func(ctx context.Context)) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f(p.ctx)
	}()
}

func (p *process) isDead() bool {
	select {
	case <-p.dead:
		return true
	default:
		return false
	}
}

// crash kills the process: its context ends, its connections close, and its hook refuses every
// command from now on.
func (p *process) crash() {
	p.mu.Lock()
	if p.isDead() {
		p.mu.Unlock()
		return
	}
	close(p.dead)
	p.mu.Unlock()
	p.kill()
	p.lock.Close()
	p.inv.Close()
	p.a.emit(Event{Kind: EvCrashed, Buyer: p.n})
	p.a.exit(p)
}

// freeze stops the whole process for d: no command of it leaves until it thaws.
func (p *process) freeze(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	if until.Before(p.thawAt) {
		return
	}
	p.thawAt = until
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
		p.a.emit(Event{Kind: EvFrozen, Buyer: p.n, Detail: d.String()})
		go p.thawLoop(p.gate)
	default:
	}
}

// thawLoop reopens gate once the latest thaw time has passed (a second freeze can extend it), or
// at once if the process dies.
func (p *process) thawLoop(gate chan struct{}) {
	for {
		p.mu.Lock()
		wait := time.Until(p.thawAt)
		if wait <= 0 || p.isDead() {
			close(gate)
			p.mu.Unlock()
			if !p.isDead() {
				p.a.emit(Event{Kind: EvThawed, Buyer: p.n})
			}
			return
		}
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-p.dead:
			t.Stop()
		}
	}
}

// awaitThaw blocks while the process is frozen. It fails if the process dies or ctx ends.
func (p *process) awaitThaw(ctx context.Context) error {
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	select {
	case <-gate:
	case <-p.dead:
		return ErrCrashed
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.isDead() {
		return ErrCrashed
	}
	return nil
}

// sleep waits d of the process's own time: it fails if the process dies or ctx ends.
func (p *process) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-p.dead:
		return ErrCrashed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// outlast waits, once a fault's own time is over, until the witness has acted or the cap since
// the fault began has passed.
func (p *process) outlast(ctx context.Context, began time.Time) error {
	if p.witness == nil {
		return nil
	}
	t := time.NewTimer(time.Until(began.Add(p.witnessCap)))
	defer t.Stop()
	select {
	case <-p.witness:
	case <-t.C:
	case <-p.dead:
		return ErrCrashed
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// arm sets the fault that waits for its moment in this process, and wakes its work if it is in it.
func (p *process) arm(f Fault) {
	p.mu.Lock()
	p.armed = f
	p.mu.Unlock()
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// take returns the armed fault if it is one of want, and disarms it.
func (p *process) take(want ...Fault) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range want {
		if p.armed == w && w != FaultNone {
			p.armed = FaultNone
			return w
		}
	}
	return FaultNone
}

// close stops the process for good and waits for its goroutines.
func (p *process) close() {
	p.kill()
	p.wg.Wait()
	p.lock.Close()
	p.inv.Close()
}

// hook is a process's go-redis hook: the simulated network between the process and Redis.
type hook struct {
	p    *process
	lock bool // on the lock server's client
}

func (h hook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		p := h.p
		if p.isDead() {
			cmd.SetErr(ErrCrashed)
			return ErrCrashed
		}
		if redisenv.Handshake(cmd) {
			// go-redis sends these on a fresh connection, from inside a command's own
			// processing: they are part of that command's round trip.
			return next(ctx, cmd)
		}
		var froze time.Time
		if h.lock && p.deletesLock(cmd) && p.take(FaultUnlockRace) == FaultUnlockRace {
			p.a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: string(FaultUnlockRace) + ": frozen just before " + p.a.label(cmd, true)})
			froze = time.Now()
			p.freeze(p.a.unlockFreeze())
		}
		if err := p.awaitThaw(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		if !froze.IsZero() {
			if err := p.outlast(ctx, froze); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		if err := p.sleep(ctx, p.a.t.RTT); err != nil {
			cmd.SetErr(err)
			return err
		}
		p.a.command(p, cmd, h.lock)
		if h.lock {
			return p.a.trackLock(ctx, p, cmd, next)
		}
		return next(ctx, cmd)
	}
}

func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p := h.p
		if p.isDead() {
			return ErrCrashed
		}
		if redisenv.Handshake(cmds...) {
			return next(ctx, cmds)
		}
		if err := p.awaitThaw(ctx); err != nil {
			return err
		}
		if err := p.sleep(ctx, p.a.t.RTT); err != nil {
			return err
		}
		for _, cmd := range cmds {
			p.a.command(p, cmd, h.lock)
		}
		return next(ctx, cmds)
	}
}

// deletesLock reports whether cmd is the command of an unlock that can delete the lock: a DEL or
// UNLINK of the lock key, or a script on it, sent after this order wrote the stock.
func (p *process) deletesLock(cmd redis.Cmder) bool {
	p.mu.Lock()
	wrote := p.wrote
	p.mu.Unlock()
	if !wrote {
		return false
	}
	switch cmd.Name() {
	case "del", "unlink", "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall":
		return touches(cmd, p.a.lockKey)
	}
	return false
}

// touches reports whether any argument of cmd is key.
func touches(cmd redis.Cmder, key string) bool {
	for _, a := range cmd.Args()[1:] {
		if s, ok := a.(string); ok && s == key {
			return true
		}
	}
	return false
}
