package arena

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
)

// order is one call of the step's order handler: one buyer's request.
type order struct {
	id      int // arena-wide, from 1
	p       *process
	k       int           // the process's k-th order
	faulted bool          // the arena's own fault failed its work (guarded by the arena's mu)
	hold    Wait          // when not nil, the order stays inside after its work until it closes (guarded by the arena's mu)
	atLeast time.Duration // its work lasts at least this long
	holdFor time.Duration // from its work's start, how long hold may keep it inside
}

// callKind tells a Lock call from an Unlock call.
type callKind int

const (
	lockCall callKind = iota + 1
	unlockCall
)

// call is one Lock or Unlock call of a buyer's Locker, as the arena saw it pass.
type call struct {
	id   int
	kind callKind
	p    *process
	o    *order // nil when the call's context carried no order and the process had several
	// holdKeys, for an Unlock call, is what its process held as the call began, by node: the
	// keys whose commands the unlock-race fault freezes before.
	holdKeys map[int][]string
	touched  int   // commands of the call carried out that named one of holdKeys (unlock-race counts them)
	g        int64 // the goroutine that made the call
}

type ctxKey int

const (
	orderKey ctxKey = iota + 1
	callKey
)

func withOrder(ctx context.Context, o *order) context.Context {
	return context.WithValue(ctx, orderKey, o)
}

func orderFrom(ctx context.Context) *order {
	o, _ := ctx.Value(orderKey).(*order)
	return o
}

// callOf is the call a command of p sent with ctx belongs to: the one ctx carries, or, when ctx
// carries none (a command sent with the process's context, or with one of the Locker's own), the
// call under way on the goroutine that sends it. A watchdog's renewal, sent from a goroutine of
// its own, belongs to no call, nor does a command sent with the context of a call that has
// returned. Hazard: a call that hands its commands to another goroutine with a
// context not derived from the call's has them attributed to none.
func (p *process) callOf(ctx context.Context) *call {
	if c, _ := ctx.Value(callKey).(*call); c != nil {
		p.mu.Lock()
		live := p.calls[c]
		p.mu.Unlock()
		if live {
			return c
		}
		// The call has returned: a goroutine it started with its context (a renewal) sends on
		// its own, as its process's, in no call.
		return nil
	}
	p.mu.Lock()
	n := len(p.calls)
	p.mu.Unlock()
	if n == 0 {
		return nil
	}
	g := goid()
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.calls {
		if c.g == g {
			return c
		}
	}
	return nil
}

// goid is the id of the goroutine that calls it, as runtime.Stack prints it ("goroutine 42 [").
func goid() int64 {
	var buf [40]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseInt(string(b), 10, 64)
	return n
}

// observedLocker is the Locker a step's handler is given: the step's own Locker, with every call
// recorded on its way in and out. It adds no Redis command and changes no result. Hazard: a
// handler that calls Lock with a context not derived from its own has its call attributed to the
// process's only order under way, or to none.
type observedLocker struct {
	p     *process
	inner steps.Locker
}

func (l *observedLocker) Lock(ctx context.Context, key string) (bool, error) {
	c := l.p.callBegan(ctx, lockCall)
	ok, err := l.inner.Lock(context.WithValue(ctx, callKey, c), key)
	l.p.callEnded(c, ok, err)
	l.p.a.afterLock(l.p, ok && err == nil)
	return ok, err
}

func (l *observedLocker) Unlock(ctx context.Context, key string) error {
	c := l.p.callBegan(ctx, unlockCall)
	l.p.a.prio.began(l.p, c)
	err := l.inner.Unlock(context.WithValue(ctx, callKey, c), key)
	l.p.callEnded(c, err == nil, err)
	l.p.unlocked(c)
	return err
}

// callBegan records the start of a Lock or Unlock call of p.
func (p *process) callBegan(ctx context.Context, kind callKind) *call {
	a := p.a
	a.mu.Lock()
	defer a.mu.Unlock()
	o := orderFrom(ctx)
	if o == nil && len(p.current) == 1 {
		o = p.current[0]
	}
	a.nextCall++
	c := &call{id: a.nextCall, kind: kind, p: p, o: o, g: goid()}
	rec := history.Record{Kind: history.RecCall, What: history.CallLock, Buyer: p.n, Call: c.id}
	if kind == unlockCall {
		rec.What = history.CallUnlock
		c.holdKeys = a.live.HoldKeys(p.n)
	} else {
		p.lockCalls++
	}
	if o != nil {
		rec.Order = o.id
	}
	a.record(rec)
	p.mu.Lock()
	p.calls[c] = true
	switch {
	case kind == lockCall:
		p.releasing = nil
	case len(c.holdKeys) > 0:
		p.releasing = c
	}
	p.mu.Unlock()
	return c
}

// callEnded records what a call answered.
func (p *process) callEnded(c *call, ok bool, err error) {
	a := p.a
	a.prio.ended(p, c)
	now := a.Since()
	p.mu.Lock()
	delete(p.calls, c)
	if len(p.ended) > 0 && p.ended[0].at != now {
		p.ended = p.ended[:0]
	}
	p.ended = append(p.ended, callEnd{id: c.id, at: now})
	p.mu.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	rec := history.Record{Kind: history.RecCall, What: history.CallLock, Buyer: p.n, Call: c.id, End: true, OK: ok}
	if c.kind == unlockCall {
		rec.What = history.CallUnlock
	}
	if c.o != nil {
		rec.Order = c.o.id
	}
	if err != nil {
		rec.Err = err.Error()
	}
	a.record(rec)
}

// unlocked tells the staging that p's Unlock call c has returned: how many commands touched the
// lock its process held is what the unlock-race's plays try a gap before each of (the most of any
// process's: the holder's own release may have been cut short by what the race did).
func (p *process) unlocked(c *call) {
	if len(c.holdKeys) == 0 {
		return
	}
	p.mu.Lock()
	if r := p.race; r != nil && c.id > r.after {
		if r.unlocks == 0 {
			r.first = c.id
		}
		r.unlocks++
	}
	touched := c.touched
	p.mu.Unlock()
	a := p.a
	a.mu.Lock()
	a.unlockTouched = max(a.unlockTouched, touched)
	a.mu.Unlock()
}
