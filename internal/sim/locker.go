package sim

import (
	"context"
	"time"

	"github.com/lockstep-lab/lockstep/steps"
)

// order is one call of the step's order handler: one buyer's request.
type order struct {
	id    int // arena-wide, from 1
	p     *process
	k     int // the process's k-th order
	began time.Duration

	// The fields below are guarded by the arena's mu.
	readSeq   int64         // the inventory's sequence number of the first stock read (or sale); 0 before
	readAt    time.Duration // when that read's reply arrived
	endSeq    int64         // the sequence number the order's critical section ended at; 0 while open
	endAt     time.Duration
	final     bool // endSeq is a stock write, not a stand-in (an unlock, the handler's return)
	confirmed int  // stock writes the inventory accepted
	holds     int  // Lock calls that returned true, minus Unlock calls that returned, never below 0
	heldAt    time.Duration
	waited    bool // a lock command of this order found the lock held by another process
	faulted   bool // the arena's own fault failed its work: if it sold nothing, nobody turned it away
	done      bool
}

func (o *order) entered() bool { return o.readSeq != 0 }

// callKind tells a Lock call from an Unlock call.
type callKind int

const (
	lockCall callKind = iota + 1
	unlockCall
)

// call is one Lock or Unlock call of a buyer's Locker, as the arena saw it pass.
type call struct {
	kind  callKind
	p     *process
	o     *order // nil when the call's context carried no order and the process had several
	began time.Duration
	asked int64  // the order in which its first lock command reached a lock node, 0 before
	wrote []bool // per lock node: a command of this call created or replaced the lock there
}

// before reports whether c asked for the lock before x did: by the order their first commands
// reached the lock nodes, or, for a call that sent none, by when it began.
func (c *call) before(x *call) bool {
	if c.asked != 0 && x.asked != 0 {
		return c.asked < x.asked
	}
	return c.began < x.began
}

// order is the k of the call's order, 0 if none.
func (c *call) order() int {
	if c.o == nil {
		return 0
	}
	return c.o.k
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

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey).(*call)
	return c
}

// observedLocker is the Locker a step's handler is given: the step's own Locker, with every call
// reported to the arena on its way in and out. It adds no Redis command and changes no result.
// Hazard: a handler that calls Lock with a context not derived from its own has its call
// attributed to the process's only order under way, or to none.
type observedLocker struct {
	p     *process
	inner steps.Locker
}

func (l *observedLocker) Lock(ctx context.Context, key string) (bool, error) {
	a := l.p.a
	c := a.callBegan(l.p, ctx, lockCall)
	ok, err := l.inner.Lock(context.WithValue(ctx, callKey, c), key)
	a.lockReturned(c, ok, err)
	return ok, err
}

func (l *observedLocker) Unlock(ctx context.Context, key string) error {
	a := l.p.a
	c := a.callBegan(l.p, ctx, unlockCall)
	a.unlockBegan(c)
	err := l.inner.Unlock(context.WithValue(ctx, callKey, c), key)
	a.unlockReturned(c)
	return err
}
