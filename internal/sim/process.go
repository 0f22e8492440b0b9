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

// process is one simulated buyer process: its own Redis clients (one per lock node, one to the
// inventory), its own Locker, its goroutines. Every command it sends passes its hooks, which are
// its network: freezes, crashes, partitions and the round trip act there. Hazard: Go cannot kill a
// goroutine, so a crashed process's code may still run; the hooks make sure none of it reaches
// Redis.
type process struct {
	a      *Arena
	n      int // buyers count from 1; the end-of-run probe is 0
	name   string
	lock   []*redis.Client // one per lock node
	inv    *redis.Client
	locker *observedLocker
	ctx    context.Context // ends when the process dies or the arena closes
	kill   context.CancelFunc
	dead   chan struct{}
	wg     sync.WaitGroup // goroutines started through Proc.Go

	mu       sync.Mutex
	gate     chan struct{} // closed while the process runs; open while it is frozen
	thawAt   time.Time
	armed    Fault         // a fault waiting for its moment
	poke     chan struct{} // wakes the work when a fault is injected into it
	orders   int           // orders started
	current  []*order      // orders under way
	lastDone time.Duration // when its last order ended

	// witness, set by a scripted scenario, closes when the buyer this process's fault is staged
	// for has entered the critical section, found the lock taken, or finished. A staged fault
	// lasts until then (or witnessCap), not for a fixed time, so the interleaving a scenario
	// forces holds however late either side runs.
	witness    <-chan struct{}
	witnessCap time.Duration
}

func newProcess(a *Arena, n int) *process {
	p := &process{a: a, n: n, name: "buyer-" + strconv.Itoa(n), dead: make(chan struct{}), poke: make(chan struct{}, 1)}
	if n == 0 {
		p.name = "probe"
	}
	p.gate = make(chan struct{})
	close(p.gate)
	p.ctx, p.kill = context.WithCancel(context.Background())
	for i, node := range a.env.Nodes() {
		o := node.Options()
		o.MaxRetries = 3
		c := redis.NewClient(o)
		c.AddHook(lockHook{p: p, node: i})
		if h := node.Hook(); h != nil {
			c.AddHook(h)
		}
		p.lock = append(p.lock, c)
	}
	p.inv = redis.NewClient(a.env.InventoryOptions())
	p.inv.AddHook(invHook{p: p})
	inner := a.step.New(steps.Proc{ID: p.name, Redis: p.lock[0], Nodes: p.lock, TTL: a.t.TTL, Go: p.spawn})
	p.locker = &observedLocker{p: p, inner: inner}
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

// crash kills the process: its context ends, its connections close, and its hooks refuse every
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
	for _, c := range p.lock {
		c.Close()
	}
	p.inv.Close()
	p.a.emit(Event{Kind: EvCrashed, Buyer: p.n})
	p.a.crashed(p)
}

// freeze stops the whole process: no command of it leaves until it thaws, after d, or, when the
// process is staged, once its witness has acted (at most witnessCap after now).
func (p *process) freeze(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(d)
	if p.witness != nil {
		until = time.Now().Add(p.witnessCap)
	}
	if until.Before(p.thawAt) {
		return
	}
	p.thawAt = until
	select {
	case <-p.gate:
		p.gate = make(chan struct{})
		p.a.emit(Event{Kind: EvFrozen, Buyer: p.n, Detail: d.String()})
		go p.thawLoop(p.gate, p.witness)
	default:
	}
}

// thawLoop reopens gate once the latest thaw time has passed (a second freeze can extend it), or
// the witness has acted, or the process died.
func (p *process) thawLoop(gate chan struct{}, witness <-chan struct{}) {
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
		case <-witness:
			// The counterpart has acted: thaw one Work later, so the overlap the freeze was
			// staged for is wide enough to see.
			p.mu.Lock()
			p.thawAt = time.Now().Add(p.a.t.Work)
			p.mu.Unlock()
			witness = nil
		case <-p.dead:
		}
		t.Stop()
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
	for _, c := range p.lock {
		c.Close()
	}
	p.inv.Close()
}

// network is the way out of the process: a command waits while the process is frozen, then
// spends one simulated round trip.
func (p *process) network(ctx context.Context) error {
	if err := p.awaitThaw(ctx); err != nil {
		return err
	}
	return p.sleep(ctx, p.a.t.RTT)
}

// lockHook is a process's go-redis hook on one lock node's client: the simulated network, the
// unlock-race fault, the command count, and the referee's watch over the lock key.
type lockHook struct {
	p    *process
	node int
}

func (h lockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h lockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.p.lockCmds(ctx, h.node, []redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (h lockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.p.lockCmds(ctx, h.node, cmds, func() error { return next(ctx, cmds) })
	}
}

// lockCmds sends one command, pipeline or transaction of p to lock node node.
func (p *process) lockCmds(ctx context.Context, node int, cmds []redis.Cmder, send func() error) error {
	if p.isDead() {
		return fail(cmds, ErrCrashed)
	}
	if redisenv.Handshake(cmds...) {
		// go-redis sends these on a fresh connection, from inside a command's own
		// processing: they are part of that command's round trip.
		return send()
	}
	inner := payload(cmds)
	c := callFrom(ctx)
	if c != nil && c.kind == unlockCall && anyMayDelete(inner, p.a.lockKey) && p.take(FaultUnlockRace) == FaultUnlockRace {
		p.a.emit(Event{Kind: EvFault, Buyer: p.n, Detail: string(FaultUnlockRace) + ": frozen just before " + p.a.label(inner, node)})
		p.freeze(p.a.unlockFreeze())
	}
	if err := p.network(ctx); err != nil {
		return fail(cmds, err)
	}
	p.a.count(p, inner, node)
	return p.a.observe(ctx, p, node, inner, c, send)
}

// invHook is a process's go-redis hook on its inventory client: the simulated network.
type invHook struct{ p *process }

func (h invHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h invHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.p.invCmds(ctx, []redis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (h invHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.p.invCmds(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

func (p *process) invCmds(ctx context.Context, cmds []redis.Cmder, send func() error) error {
	if p.isDead() {
		return fail(cmds, ErrCrashed)
	}
	if redisenv.Handshake(cmds...) {
		return send()
	}
	if err := p.network(ctx); err != nil {
		return fail(cmds, err)
	}
	return send()
}

// fail sets err on every command and returns it.
func fail(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}
