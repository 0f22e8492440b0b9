package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

const (
	// ttl is every lock's lease: long enough that no lock expires in a benchmark, so the
	// watchdogs of 08–11 and the lease guards of 12–16 start and stop but never fire. Hazard: the
	// back-off steps (10–12, 15) pause TTL/4 to TTL/2 between tries, 2.5–5 s here, so under
	// contention their waits run to seconds and their rounds to tens of seconds.
	ttl = 10 * time.Second
	// retrySleep is the pause between tries of the non-blocking steps 04–06 when the key is taken:
	// the pause of the redislock peer's LinearBackoff, so the two polling designs compare.
	retrySleep = time.Millisecond
	// lockTimeout bounds one acquisition in time; maxTries bounds it in tries of Lock. A lock
	// that starves a waiter for longer fails the benchmark. It is twice the retry budget of 10–16
	// (10 × TTL), so the harness never cuts short a wait the step itself would sit out: at 16
	// processes their back-off waits reach 20 s and more.
	lockTimeout = 20 * ttl
	maxTries    = 100_000

	// cyclesPerRound is how many uncontended Lock + Unlock cycles a contender runs per round: a
	// few milliseconds, short enough that the machine rarely changes pace within a round.
	cyclesPerRound = 16
)

// procs runs the goroutines the Lockers start through steps.Proc.Go (the watchdogs of 08/09) with
// one context, cancelled by stop, which then waits for all of them. Hazard: a goroutine that
// ignores its context makes stop wait for ever.
type procs struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newProcs() *procs {
	ps := &procs{}
	ps.ctx, ps.cancel = context.WithCancel(context.Background())
	return ps
}

func (ps *procs) Go(f func(ctx context.Context)) {
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		f(ps.ctx)
	}()
}

func (ps *procs) stop() {
	ps.cancel()
	ps.wg.Wait()
}

// cleanup undoes a benchmark's setup: first it stops every process's goroutines, then it closes
// the clients they might still have used.
type cleanup struct{ stops, closes []func() }

func (c *cleanup) run() {
	for _, f := range c.stops {
		f()
	}
	for _, f := range c.closes {
		f()
	}
}

var keySeq atomic.Int64

// uniqueKey names a lock key no other benchmark run of this binary uses.
func uniqueKey(kind, name string) string {
	return fmt.Sprintf("lockstep-bench:%s:%s:%d", kind, name, keySeq.Add(1))
}

// newProc builds one process of contender c: its own client of every node in addrs (counted by
// cnt, not yet dialled) and the Locker c builds on them, given the process's lifetime (ps's
// context, cancelled by ps.stop) and the real wall clock. close closes the clients. Hazard: close
// before the process's goroutines have stopped (ps.stop) and a watchdog's renewal fails on a
// closed client; a lease clock (12–16) rings on its own, not through ps.Go, and renews every hold
// not given back until ps.stop, so a benchmark must give back every lock it took.
func newProc(c contender, addrs []string, id string, cnt *counter, ps *procs) (l steps.Locker, nodes []*redis.Client, close func()) {
	nodes = make([]*redis.Client, len(addrs))
	for i, addr := range addrs {
		nodes[i] = newClient(addr, cnt)
	}
	p := steps.Proc{ID: id, Redis: nodes[0], Nodes: nodes, TTL: ttl, Go: ps.Go, Ctx: ps.ctx, Now: time.Now}
	return c.new(p), nodes, func() {
		for _, rdb := range nodes {
			rdb.Close()
		}
	}
}

// BenchmarkLockUnlock measures one uncontended Lock + Unlock cycle of one key by one process, for
// every contender -locks chooses (all by default) at once, interleaved: b.N is the number of
// rounds, and in each round every contender runs cyclesPerRound cycles (see interleave). Each
// contender first runs one untimed cycle, so its connections are dialled and its scripts loaded
// (TestRoundTrips shows the cold cycle). The per-lock results are printed when the binary ends
// (see report): BenchmarkLockUnlock/<name> lines with ns/op (the median over rounds), x-best-peer
// (the median over rounds of the lock's time / the best peer's time in the same round), cmds/op,
// dials/op (0 once warm: a lock that dials per cycle shows here), B/op and allocs/op, and a
// Markdown table with the spreads. Hazard: a ratio within a round cancels what slows every lock
// alike, not what slows one kind of work more than another — on a busy machine a goroutine
// hand-off (08/09's watchdog, redsync's goroutine per command) waits for a core while a plain
// round trip does not — so a ratio belongs with the load it was measured under.
func BenchmarkLockUnlock(b *testing.B) {
	locks := chosen(b)
	run := &interleaved{bench: "LockUnlock", locks: locks, title: "Uncontended Lock + Unlock"}
	type arm struct {
		c   contender
		l   steps.Locker
		cnt *counter
		key string
	}
	arms := make([]arm, len(locks))
	// A deadline as a request would carry (redislock adds one of its own otherwise).
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	var cl cleanup
	defer cl.run()
	for i, c := range locks {
		addrs := needNodes(b, c.nodes)
		cnt := new(counter)
		ps := newProcs()
		cl.stops = append(cl.stops, ps.stop)
		l, _, closeClients := newProc(c, addrs, "bench-1", cnt, ps)
		cl.closes = append(cl.closes, closeClients)
		arms[i] = arm{c, l, cnt, uniqueKey("uncontended", c.name)}
	}
	// A cycle is one request: a request-owned lock's WithRequest runs inside the timed cycle, as
	// redislock makes its token inside Obtain.
	cycle := func(a arm) error {
		rctx, done := a.c.newRequest(ctx)
		defer done()
		ok, err := a.l.Lock(rctx, a.key)
		if err != nil || !ok {
			return fmt.Errorf("Lock(%s) = %v, %v on a free key", a.key, ok, err)
		}
		if err := a.l.Unlock(rctx, a.key); err != nil {
			return fmt.Errorf("Unlock(%s): %v", a.key, err)
		}
		return nil
	}
	for i, a := range arms {
		if err := cycle(a); err != nil { // warm: dial, load scripts
			b.Fatalf("%s: warm-up: %v", locks[i].name, err)
		}
	}
	interleave(b, run, func(i int) (batch, error) {
		a := arms[i]
		a.cnt.n.Store(0)
		a.cnt.dials.Store(0)
		t0 := time.Now()
		for range cyclesPerRound {
			if err := cycle(a); err != nil {
				return batch{}, err
			}
		}
		return batch{ops: cyclesPerRound, elapsed: time.Since(t0), cmds: a.cnt.n.Load(), dials: a.cnt.dials.Load(),
			allOps: cyclesPerRound}, nil
	})
}

// BenchmarkContended runs, for 1, 4 and 16 processes and a critical section of 0 and of 1 ms, every
// contender -locks chooses (all by default) interleaved: b.N is the number of rounds, and in each
// round each contender's processes contend for one key during a window (see round). The per-lock
// results are printed when the binary ends (see report) as BenchmarkContended/<name>/procs=N/cs=D
// lines: ns/op per acquisition (the median over rounds), cmds/op (every command of every process,
// failed tries and spins included, per acquisition), dials/op (connections dialled per
// acquisition: a waiter of 13, 14 and 16 dials one for its subscription), p50/p99-wait-ns (from
// asking to holding, over every acquisition of every round), p50/p99-handoff-ns (from one holder's
// Unlock returning to the next holder's Lock returning; 0 when the next Lock returned first),
// switch-% (the share of acquisitions that went to another process than the one before) and B/op,
// allocs/op; and a Markdown table with the spreads. Hazard: every process is a goroutine of this
// binary, and the redis-servers share its 2 cores, so a lock whose waiters spin takes CPU from its
// own holder (and from Redis) in a way processes on separate machines would not.
func BenchmarkContended(b *testing.B) {
	for _, cs := range []time.Duration{0, time.Millisecond} {
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("procs=%d/cs=%s", n, csName(cs)), func(b *testing.B) {
				contended(b, n, cs)
			})
		}
	}
}

// span is one acquisition: when its process asked, when its Lock and its Unlock returned, since
// the start of the round; measured if it was asked for inside the round's window.
type span struct {
	proc                 int
	asked, locked, freed time.Duration
	measured             bool
}

// contendedArm is one contender's processes in the contended benchmark, built once and reused by
// every round.
type contendedArm struct {
	c       contender
	lockers []steps.Locker
	cnt     *counter
	key     string
}

// contended builds n processes of every contender (each warmed by one acquisition, so its
// connections are dialled and scripts loaded) and runs b.N interleaved rounds of them. Hazard: the
// processes of every contender exist at once (16 × 10 contenders × their nodes' clients), idle
// while another contender runs; a lock whose idle processes did work (a renewal) would disturb its
// neighbours' rounds.
func contended(b *testing.B, n int, cs time.Duration) {
	procsWord := "processes"
	if n == 1 {
		procsWord = "process"
	}
	run := &interleaved{bench: "Contended", suffix: fmt.Sprintf("/procs=%d/cs=%s", n, csName(cs)),
		procs: n, cs: cs, locks: chosen(b),
		title: fmt.Sprintf("Contended, %d %s, critical section %s", n, procsWord, spaced(cs))}
	// A deadline far beyond any configuration's rounds (those of the back-off steps at 16
	// processes take tens of seconds each): it only stops a lock that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
	defer cancel()
	arms := make([]contendedArm, len(run.locks))
	var cl cleanup
	defer cl.run()
	for i, c := range run.locks {
		addrs := needNodes(b, c.nodes)
		a := contendedArm{c: c, cnt: new(counter), key: uniqueKey("contended", c.name)}
		ps := newProcs()
		cl.stops = append(cl.stops, ps.stop)
		for p := range n {
			l, _, closeClients := newProc(c, addrs, fmt.Sprintf("bench-%d", p), a.cnt, ps)
			cl.closes = append(cl.closes, closeClients)
			// warm: dial, load scripts
			rctx, done := c.newRequest(ctx)
			if err := acquire(rctx, l, a.key, c.blocking); err != nil {
				b.Fatalf("%s: warm-up Lock: %v", c.name, err)
			}
			if err := l.Unlock(rctx, a.key); err != nil {
				b.Fatalf("%s: warm-up Unlock: %v", c.name, err)
			}
			done()
			a.lockers = append(a.lockers, l)
		}
		arms[i] = a
	}
	interleave(b, run, func(i int) (batch, error) {
		return arms[i].round(ctx, cs, window(cs))
	})
}

// csName names a critical section in benchmark names: "0", "1ms".
func csName(cs time.Duration) string {
	if cs == 0 {
		return "0"
	}
	return cs.String()
}

// spaced writes a duration for prose: "0", "1 ms", "250 ms".
func spaced(d time.Duration) string {
	s := csName(d)
	if i := strings.IndexFunc(s, unicode.IsLetter); i > 0 {
		return s[:i] + " " + s[i:]
	}
	return s
}

// window is how long a contender's round asks for acquisitions that count: 50 ms plus 200
// critical sections, a few hundred acquisitions of any lock here.
func window(cs time.Duration) time.Duration { return 50*time.Millisecond + 200*cs }

// round runs one round of a. Its processes start together and loop — ask for the key, hold it for
// cs (time.Sleep), unlock — for the window w and then on, until every acquisition asked for inside
// w has completed; then each finishes the acquisition it is in and stops. So every measured wait
// (from asking to holding) is complete and faced the full contention of every process, however
// long an unfair lock starved it. Time, commands and hand-offs per acquisition count the
// acquisitions that got the lock inside the window and the commands sent inside it (the window
// ends when this goroutine reads the command count, at w or a little later); allocations count
// the whole round. Hazard: a round lasts w plus the longest wait that started in it, which for a lock
// that starves its waiters can be seconds; lockTimeout bounds one wait.
func (a *contendedArm) round(ctx context.Context, cs, w time.Duration) (batch, error) {
	n := len(a.lockers)
	ctx, abort := context.WithCancel(ctx)
	defer abort()
	var (
		failed atomic.Pointer[error]
		wg     sync.WaitGroup
		start  = make(chan struct{})
		spans  = make([][]span, n)
		t0     time.Time

		// The measured acquisitions still pending, and whether w has passed: begin counts an
		// acquisition in while w runs, end counts it out, and measuredDone closes when w has
		// passed and none is pending; stop then tells the processes to finish.
		mu           sync.Mutex
		pending      int
		closed       bool
		measuredDone = make(chan struct{})
		stop         atomic.Bool
	)
	begin := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			pending++
		}
		return !closed
	}
	end := func() {
		mu.Lock()
		defer mu.Unlock()
		if pending--; closed && pending == 0 {
			close(measuredDone)
		}
	}
	for i, l := range a.lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fail := func(err error) {
				failed.CompareAndSwap(nil, &err)
				abort()
			}
			for !stop.Load() {
				measured := begin()
				asked := time.Since(t0)
				rctx, done := a.c.newRequest(ctx) // one acquisition is one request
				err := acquire(rctx, l, a.key, a.c.blocking)
				locked := time.Since(t0)
				if err == nil && cs > 0 {
					time.Sleep(cs) // the critical section
				}
				if err == nil {
					if err = l.Unlock(rctx, a.key); err != nil {
						err = fmt.Errorf("Unlock: %w", err)
					}
				}
				done()
				spans[i] = append(spans[i], span{i, asked, locked, time.Since(t0), measured})
				if measured {
					end()
				}
				if err != nil {
					fail(fmt.Errorf("process %d: %w", i, err))
					return
				}
			}
		}()
	}
	a.cnt.n.Store(0)
	a.cnt.dials.Store(0)
	t0 = time.Now()
	close(start)
	timer := time.NewTimer(w)
	var cmds, dials int64
	select {
	case <-timer.C:
		// The window ends now, not at w: a timer fires late on a busy machine, and commands,
		// acquisitions and time must all count the same span.
		cmds, dials = a.cnt.n.Load(), a.cnt.dials.Load()
		w = time.Since(t0)
		mu.Lock()
		if closed = true; pending == 0 {
			close(measuredDone)
		}
		mu.Unlock()
		select {
		case <-measuredDone:
		case <-ctx.Done():
		}
	case <-ctx.Done():
		timer.Stop()
	}
	stop.Store(true)
	wg.Wait()
	if err := failed.Load(); err != nil {
		return batch{}, *err
	}

	all := slices.Concat(spans...)
	slices.SortFunc(all, func(x, y span) int { return int(x.locked - y.locked) })
	bt := batch{elapsed: w, cmds: cmds, dials: dials, allOps: len(all)}
	for k, s := range all {
		if s.measured {
			bt.waits = append(bt.waits, s.locked-s.asked)
		}
		if s.locked >= w {
			continue
		}
		bt.ops++
		if k == 0 {
			continue
		}
		// The next holder's Lock can return before the previous holder's Unlock reply has been
		// read (the unlock ran on Redis, the next lock after it, and the second reply was
		// scheduled first): that hand-off counts as 0.
		bt.handoffs = append(bt.handoffs, max(0, s.locked-all[k-1].freed))
		if s.proc != all[k-1].proc {
			bt.switches++
		}
	}
	if bt.ops == 0 {
		return bt, fmt.Errorf("no acquisition in a window of %v", w)
	}
	return bt, nil
}

// acquire takes key with l, within lockTimeout and maxTries. A non-blocking Locker that answers
// false is asked again after retrySleep (a time.Timer), as the harness has always done; a blocking
// one that gave up (redsync after its 32 tries) is asked again at once. Hazard: the pause is the
// harness's choice, not the step's; a step that does not wait is only as polite as its caller.
func acquire(ctx context.Context, l steps.Locker, key string, blocking bool) error {
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	for try := 1; ; try++ {
		ok, err := l.Lock(ctx, key)
		if err != nil {
			return fmt.Errorf("Lock (try %d): %w", try, err)
		}
		if ok {
			return nil
		}
		if try >= maxTries {
			return fmt.Errorf("Lock: key still taken after %d tries", try)
		}
		if !blocking {
			t := time.NewTimer(retrySleep)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("Lock: key still taken after %v (%d tries)", lockTimeout, try)
			}
			return err
		}
	}
}
