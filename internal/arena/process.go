package arena

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
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
	// crashing is set by the first crash: the crash is recorded before anything of the process
	// learns of it, so that its own goroutines' records (a deferred Unlock's call) come after.
	crashing bool
	closed   chan struct{}  // closed once the run is over for it (close)
	wg       sync.WaitGroup // goroutines started through Proc.Go

	mu      sync.Mutex
	frozen  outage          // the whole process stops (a stop-the-world pause)
	cut     outage          // its links to the lock nodes are down (a partition); the inventory's are not
	blocked []chan struct{} // per lock node: open (closed) unless a scenario keeps this process off it
	refused []bool          // per lock node: its commands there fail at once (the node is down for it)
	skew    time.Duration   // how far its wall clock runs ahead (Proc.Now)
	conns   map[*procConn]struct{}
	armed   *armedFault // a fault waiting for its moment in the shop's work or write
	race    *unlockRace // a freeze before an unlock command, armed
	// releasing is its latest Unlock call begun holding a lock, until its next Lock call begins:
	// a command sent on that call's behalf from another goroutine, during the call or after it
	// (a release handed to a goroutine), is raced as one of the call's (releaseOf).
	releasing *call
	lose      *lostReply     // a lock reply to lose, armed
	calls     map[*call]bool // Lock and Unlock calls under way
	lockCalls int            // Lock calls made (guarded by the arena's mu)
	poke      chan struct{}  // wakes the work when a fault is injected into it
	orders    int            // orders started (guarded by the arena's mu, as current and holds)
	current   []*order       // orders under way
	holds     []stay         // holds a stage set for orders of this process, by number
	again     int64          // the goroutine told NOSCRIPT: its script's body is part of that round trip (gate.go)
	own       map[int64]int  // goroutines the lab started for it (orders', Proc.Go's), by id: how many marks
	flights   []*flight      // its commands on their way out (network), in the order they left
	ended     []callEnd      // its calls that ended at the latest instant one did (begunBefore)
	strays    map[int64]*stray
	// order is its step's order handler: its own copy's, where the step has one per process
	// (Step.PerProcess).
	order func(context.Context, steps.Locker, steps.Shop) error
}

func newProcess(a *Arena, n int) *process {
	p := &process{a: a, n: n, name: "buyer-" + strconv.Itoa(n), dead: make(chan struct{}), closed: make(chan struct{}),
		poke: make(chan struct{}, 1), own: map[int64]int{}, strays: map[int64]*stray{}}
	if n == 0 {
		p.name = "probe"
	}
	p.frozen = newOutage(history.ProcessFrozen, history.ProcessThawed)
	p.cut = newOutage(history.ProcessPartitioned, history.ProcessHealed)
	p.conns = map[*procConn]struct{}{}
	p.calls = map[*call]bool{}
	p.ctx, p.kill = context.WithCancel(context.Background())
	for i, node := range a.env.Nodes() {
		open := make(chan struct{})
		close(open)
		p.blocked = append(p.blocked, open)
		p.refused = append(p.refused, false)
		c := node.NewClient()
		c.AddHook(lockHook{p: p, node: i})
		if h := node.Hook(); h != nil {
			c.AddHook(h)
		}
		p.lock = append(p.lock, c)
	}
	p.inv = redis.NewClient(a.env.InventoryOptions())
	p.inv.AddHook(invHook{p: p})
	newLocker := a.step.New
	p.order = a.step.Order
	if a.step.PerProcess != nil {
		newLocker, p.order = a.step.PerProcess(n)
	}
	inner := newLocker(steps.Proc{ID: p.name, Redis: p.lock[0], Nodes: p.lock, TTL: a.t.TTL, Go: p.spawn, Ctx: p.ctx, Now: p.now})
	p.locker = &observedLocker{p: p, inner: inner}
	return p
}

// whose names the process's own in a sentence: "buyer 3's", "the end-of-run probe's".
func (p *process) whose() string {
	if p.n == 0 {
		return "the end-of-run probe's"
	}
	return fmt.Sprintf("buyer %d's", p.n)
}

// now is Proc.Now: the process's wall clock, skew ahead of the machine's.
func (p *process) now() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Now().Add(p.skew)
}

// block keeps the process's traffic off lock node i until unblock is called: its commands there
// wait, and fail when their context ends, as over a link that drops everything.
func (p *process) block(i int) (unblock func()) {
	c := make(chan struct{})
	p.mu.Lock()
	p.blocked[i] = c
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(c) }) }
}

// refuse makes lock node i refuse the process's commands at once, as a node that is down for it
// (a connection refused), until the returned function is called.
func (p *process) refuse(i int) (restore func()) {
	p.mu.Lock()
	p.refused[i] = true
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.refused[i] = false
		p.mu.Unlock()
	}
}

// errRefused is what a command to a lock node that refuses the process answers.
var errRefused = errors.New("connection refused: the lock node is down for this process")

// spawn is Proc.Go: the goroutine belongs to the process and ends with it.
func (p *process) spawn(f func(ctx context.Context)) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.ours(func() { f(p.ctx) })
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
	if p.crashing {
		p.mu.Unlock()
		return
	}
	p.crashing = true
	p.mu.Unlock()
	p.a.crashed(p)
	p.mu.Lock()
	close(p.dead)
	p.mu.Unlock()
	p.kill()
	for _, c := range p.lock {
		c.Close()
	}
	p.inv.Close()
	p.closeConns() // its subscriptions die with it too
}

// outage is a stretch of time in which some of a process's traffic cannot leave: all of it while
// the process is frozen, its lock traffic while it is cut off from the lock nodes. It ends at its
// cap, or a beat after what it waits for has happened.
type outage struct {
	gate       chan struct{} // closed while traffic flows; open during the outage
	until      time.Time
	began      time.Time
	start, end string // the process records that say it began and ended
}

func newOutage(start, end string) outage {
	o := outage{gate: make(chan struct{}), start: start, end: end}
	close(o.gate)
	return o
}

// freeze stops the whole process for at most cap, or until w has happened (then a beat): no
// command of it leaves until it thaws. says is what it waits for, in words.
func (p *process) freeze(cap time.Duration, w Wait, says string) { p.begin(&p.frozen, cap, w, says) }

// partition cuts the process's links to the lock nodes for at most cap, or until w (then a
// beat); its work and its inventory go on.
func (p *process) partition(cap time.Duration, w Wait, says string) { p.begin(&p.cut, cap, w, says) }

// begin begins (or extends) outage o for at most cap, or until w has happened, then a beat.
func (p *process) begin(o *outage, cap time.Duration, w Wait, says string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := time.Now().Add(cap)
	if until.Before(o.until) {
		return
	}
	o.until = until
	select {
	case <-o.gate:
		o.gate = make(chan struct{})
		o.began = time.Now()
		p.a.recordNow(history.Record{Kind: history.RecProcess, What: o.start, Buyer: p.n, D: cap, Says: says})
		p.wg.Add(1)
		go p.endLoop(o, o.gate, w)
	default:
	}
}

// endLoop reopens gate once the latest end of o has passed (a second begin can extend it), or a
// beat after w has happened, or when the process died; the end's record says how long it lasted.
func (p *process) endLoop(o *outage, gate chan struct{}, w Wait) {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		wait := time.Until(o.until)
		if wait <= 0 || p.isDead() || p.ctx.Err() != nil {
			close(gate)
			lasted := time.Since(o.began)
			p.mu.Unlock()
			if !p.isDead() {
				p.a.recordNow(history.Record{Kind: history.RecProcess, What: o.end, Buyer: p.n, D: lasted})
			}
			return
		}
		p.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w:
			// The counterpart has acted: end a beat later, so the overlap the outage was
			// staged for is wide enough to see.
			p.mu.Lock()
			o.until = time.Now().Add(p.a.beat())
			p.mu.Unlock()
			w = nil
		case <-p.dead:
		case <-p.ctx.Done():
		}
		t.Stop()
	}
}

// await blocks while o lasts. It fails if the process dies or ctx ends.
func (p *process) await(ctx context.Context, o *outage) error {
	p.mu.Lock()
	gate := o.gate
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
func (p *process) arm(x *armedFault) {
	p.mu.Lock()
	p.armed = x
	p.mu.Unlock()
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// take returns the armed fault if its moment is at, and disarms it.
func (p *process) take(at moment) *armedFault {
	p.mu.Lock()
	defer p.mu.Unlock()
	x := p.armed
	if x == nil || x.at != at {
		return nil
	}
	p.armed = nil
	return x
}

// close stops the process for good and waits for its goroutines started through Proc.Go; a
// goroutine it started itself ends at its next command (sender), not waited for.
func (p *process) close() {
	p.mu.Lock()
	if !p.isClosed() {
		close(p.closed)
	}
	p.mu.Unlock()
	p.kill()
	p.wg.Wait()
	for _, c := range p.lock {
		c.Close()
	}
	p.inv.Close()
}

// network is the way out of the process to lock node node (or to the inventory, node -1): a
// command waits while the process is frozen (and, to a lock node, while its links are cut or that
// node is kept from it), then spends one simulated round trip (trip). c is the Lock or Unlock
// call the command is sent in (nil: none).
func (p *process) network(ctx context.Context, node int, c *call) error {
	f := p.depart(c)
	defer p.land(f)
	if err := p.outages(ctx, node); err != nil {
		return err
	}
	return p.sleep(ctx, p.trip(f))
}

// outages waits while the process is frozen and, to lock node node, while its links are cut or
// that node is kept from it.
func (p *process) outages(ctx context.Context, node int) error {
	if err := p.await(ctx, &p.frozen); err != nil {
		return err
	}
	if node >= 0 {
		if err := p.await(ctx, &p.cut); err != nil {
			return err
		}
		p.mu.Lock()
		if p.refused[node] {
			p.mu.Unlock()
			return errRefused
		}
		b := p.blocked[node]
		p.mu.Unlock()
		select {
		case <-b:
		case <-p.dead:
			return ErrCrashed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stagger holds a command of p to lock node node (numbered from 0) node nanoseconds before it
// goes out, in virtual time: the commands a process sends to several nodes at one instant (a
// quorum lock's goroutine per node) go out one nanosecond apart, in the nodes' order, whichever
// goroutine the Go scheduler ran first. So what a move decides as a command leaves (which command
// an unlock-race freezes before, and which of the others that freeze holds) and the order they
// arrive in are the same on every play. Not while a driver gates the commands (it orders them),
// nor on the wall clock.
func (p *process) stagger(ctx context.Context, node int) error {
	if !p.a.virtual || p.a.gate != nil || node <= 0 {
		return nil
	}
	return p.sleep(ctx, time.Duration(node))
}

// lockHook is a process's go-redis hook on one lock node's client: the simulated network, the
// unlock-race fault, the command count, and the referee's watch over the lock key.
type lockHook struct {
	p    *process
	node int
}

// DialHook wraps every connection to the lock node, so that a subscription (whose messages no
// command hook sees) is frozen, cut and killed with the process.
func (h lockHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		redisenv.Claim(c)
		return h.p.wrap(c, h.node), nil
	}
}

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
	p.endIfClosed()
	if p.isDead() {
		return fail(cmds, ErrCrashed)
	}
	if redisenv.Handshake(cmds...) {
		// go-redis sends these on a fresh connection, from inside a command's own
		// processing: they are part of that command's round trip.
		return send()
	}
	if err := p.stagger(ctx, node); err != nil {
		return fail(cmds, err)
	}
	inner := payload(cmds)
	g := p.sender(node, inner)
	c := p.callOf(ctx)
	rc := c // the call the unlock-race counts the command in
	if rc == nil {
		rc = p.releaseOf(node, inner)
	}
	p.unlockRace(rc, node, inner)
	if err := p.leave(ctx, node, inner, c); err != nil {
		return fail(cmds, err)
	}
	p.endIfClosed() // the run may have ended on the way
	changed, seq, err := p.a.observe(ctx, p, node, cmds, c, send)
	p.sent(g, node, inner, seq)
	err = p.loseReply(ctx, c, node, cmds, err, changed, send)
	p.noScript(err)
	if rc != nil && rc.kind == unlockCall && (err == nil || err == redis.Nil) && namesAny(inner, p.a.prefix, rc.holdKeys[node]) {
		// A command of the release that touched the lock and was carried out (one refused, a
		// script Redis does not have yet, is sent again and counted then).
		p.mu.Lock()
		rc.touched++
		p.mu.Unlock()
	}
	return err
}

// invHook is a process's go-redis hook on its inventory client: the simulated network.
type invHook struct{ p *process }

func (h invHook) DialHook(next redis.DialHook) redis.DialHook { return claimHook{}.DialHook(next) }

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
	if err := p.leave(ctx, -1, payload(cmds), nil); err != nil {
		return fail(cmds, err)
	}
	err := send()
	p.noScript(err)
	return err
}

// fail sets err on every command and returns it.
func fail(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}

// procConn is a process's connection to a lock node. Commands are faulted in the command hooks;
// a connection that subscribes is faulted here too, because its messages arrive without a
// command: while the process is frozen or cut off, nothing is read from it, and a crash closes it.
type procConn struct {
	net.Conn
	p      *process
	node   int
	pubsub atomic.Bool
}

func (p *process) wrap(c net.Conn, node int) net.Conn {
	pc := &procConn{Conn: c, p: p, node: node}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isDead() {
		c.Close()
	}
	p.conns[pc] = struct{}{}
	return pc
}

func (c *procConn) Write(b []byte) (int, error) {
	if !c.pubsub.Load() && subscribes(b) {
		c.pubsub.Store(true)
	}
	return c.Conn.Write(b)
}

// subscribes reports whether a write carries a SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE command.
func subscribes(b []byte) bool {
	b = bytes.ToLower(b)
	for _, name := range []string{"\r\nsubscribe\r\n", "\r\npsubscribe\r\n", "\r\nssubscribe\r\n"} {
		if bytes.Contains(b, []byte(name)) {
			return true
		}
	}
	return false
}

func (c *procConn) Read(b []byte) (int, error) {
	if c.pubsub.Load() {
		if err := c.p.network(context.Background(), c.node, nil); err != nil {
			return 0, net.ErrClosed
		}
	}
	return c.Conn.Read(b)
}

func (c *procConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.conns, c)
	c.p.mu.Unlock()
	return c.Conn.Close()
}

func (p *process) closeConns() {
	p.mu.Lock()
	conns := make([]*procConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Conn.Close()
	}
}

// releaseOf is the Unlock call a command of p that belongs to no call was sent on behalf of: p's
// latest Unlock begun holding a lock, no Lock call of p begun since, when the command may delete
// or replace what that Unlock began holding on node (named or not: FLUSHDB, a script). Hazard: a
// watchdog's renewal script sent while or after its process releases is taken for the release's
// (a script may delete); a freeze before it freezes the whole process, the release with it.
func (p *process) releaseOf(node int, cmds []redis.Cmder) *call {
	p.mu.Lock()
	c := p.releasing
	p.mu.Unlock()
	if c == nil || !mayDeleteAny(cmds, p.a.prefix, c.holdKeys[node]) && !(changesUnnamed(cmds) && len(c.holdKeys[node]) > 0) {
		return nil
	}
	return c
}
