package arena

import (
	"context"
	_ "embed"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// shop is one order's steps.Shop: its stock lives in the inventory store, its work is where the
// arena's faults act. Every stock command takes the inventory's next sequence number in the same
// transaction or script, so the referee orders critical sections by the inventory's own order, not
// by when a reply reached Go.
type shop struct {
	p *process
	o *order
}

var (
	//go:embed fence.lua
	fenceLua    string
	fenceScript = redis.NewScript(fenceLua)
	//go:embed sell.lua
	sellLua    string
	sellScript = redis.NewScript(sellLua)
)

func (s *shop) LockKey() string { return s.p.a.lockKey }

func (s *shop) Stock(ctx context.Context) (int, error) {
	a := s.p.a
	var seq *redis.IntCmd
	var get *redis.StringCmd
	_, err := s.p.inv.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		seq = tx.Incr(ctx, a.seqKey)
		get = tx.Get(ctx, a.stockKey)
		return nil
	})
	if err != nil && err != redis.Nil {
		return 0, err
	}
	n, err := get.Int()
	if err == redis.Nil {
		n, err = 0, nil
	}
	if err != nil {
		return 0, err
	}
	a.stockOp(s.o, history.StockRead, seq.Val(), n, 0)
	return n, nil
}

// SetStock writes n. A pause armed on the process strikes here, after the order's last check and
// before its write leaves: the write goes out when the pause ends, whatever the context says then.
func (s *shop) SetStock(ctx context.Context, n int) error {
	a := s.p.a
	ctx = s.writing(ctx)
	var seq *redis.IntCmd
	_, err := s.p.inv.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		seq = tx.Incr(ctx, a.seqKey)
		tx.Set(ctx, a.stockKey, n, 0)
		return nil
	})
	if err != nil {
		return err
	}
	a.stockOp(s.o, history.StockWrite, seq.Val(), n, 0)
	return nil
}

// writing plays a fault armed on the process for its stock write (a pause), and returns the
// context the write goes out with.
func (s *shop) writing(ctx context.Context) context.Context {
	p := s.p
	if x := p.take(atWrite); x != nil && x.m.strike(p.n, x.says, nil, 0) {
		x.do(&work{s: s, ctx: ctx}, x)
	}
	return context.WithoutCancel(ctx)
}

func (s *shop) StockFenced(ctx context.Context, token int64) (int, error) {
	a := s.p.a
	seq, ok, n, err := s.fenced(ctx, token, nil)
	if err != nil {
		return 0, err
	}
	if !ok {
		a.stockOp(s.o, history.StockReadRefused, seq, 0, token)
		return 0, steps.ErrFenced
	}
	a.stockOp(s.o, history.StockRead, seq, n, token)
	return n, nil
}

func (s *shop) SetStockFenced(ctx context.Context, n int, token int64) error {
	a := s.p.a
	ctx = s.writing(ctx)
	seq, ok, _, err := s.fenced(ctx, token, &n)
	if err != nil {
		return err
	}
	if !ok {
		a.stockOp(s.o, history.StockWriteRefused, seq, n, token)
		return steps.ErrFenced
	}
	a.stockOp(s.o, history.StockWrite, seq, n, token)
	return nil
}

// fenced runs fence.lua: a read (write nil) or a write of *write, presenting token.
func (s *shop) fenced(ctx context.Context, token int64, write *int) (seq int64, ok bool, n int, err error) {
	a := s.p.a
	args := []any{token}
	if write != nil {
		args = append(args, *write)
	}
	r, err := fenceScript.Run(ctx, s.p.inv, []string{a.stockKey, a.seqKey, a.fenceKey}, args...).Int64Slice()
	if err != nil {
		return 0, false, 0, err
	}
	return r[0], r[1] == 1, int(r[2]), nil
}

func (s *shop) Sell(ctx context.Context) error {
	a := s.p.a
	ctx = s.writing(ctx)
	r, err := sellScript.Run(ctx, s.p.inv, []string{a.stockKey, a.seqKey}).Int64Slice()
	if err != nil {
		return err
	}
	if r[1] == 1 {
		a.stockOp(s.o, history.StockSell, r[0], int(r[2]), 0)
	} else {
		a.stockOp(s.o, history.StockSoldOut, r[0], int(r[2]), 0)
	}
	if r[1] == 0 {
		return steps.ErrSoldOut
	}
	return nil
}

// Work is the business work between reading and writing the stock. It lasts Timing.Work unless a
// fault armed on the process (or armed while it works) says otherwise; then, if a stage keeps the
// order inside (HoldUntil, stayInside), until that has happened (at most holdCap), and one Work
// more.
func (s *shop) Work(ctx context.Context) error {
	p, a := s.p, s.p.a
	a.recordNow(history.Record{Kind: history.RecOrder, What: history.OrderWork, Buyer: p.n, Order: s.o.id})
	start := time.Now()
	w := &work{s: s, ctx: ctx, end: start.Add(max(a.t.Work, s.o.atLeast))}
	for {
		if x := p.take(inWork); x != nil && x.m.strike(p.n, x.says, nil, 0) {
			if err := x.do(w, x); err != nil {
				return err
			}
		}
		// Work until end; then, if the stage holds this order inside, until the hold opens or
		// its cap passes.
		var until time.Time
		var holdC Wait
		hold := a.holdOf(s.o)
		switch holdUntil := start.Add(s.o.holdFor); {
		case time.Now().Before(w.end):
			until = w.end
		case hold != nil && time.Now().Before(holdUntil):
			until, holdC = holdUntil, hold
		case w.cut:
			w.cut = false
			if err := p.await(ctx, &p.cut); err != nil {
				return err
			}
			continue
		default:
			return nil
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-t.C:
		case <-w.slowed:
			// The counterpart has acted: one more beat, and the slow work is done.
			w.slowed, w.end = nil, time.Now().Add(a.beat())
		case <-holdC:
			// What the order waited for happened: it finishes its work, one more Work long,
			// so the overlap it was held for is wide enough to see.
			a.unhold(s.o)
			w.end = time.Now().Add(a.t.Work)
			if cap := start.Add(s.o.holdFor); s.o.holdFor < a.holdCap() && w.end.After(cap) {
				w.end = cap
			}
		case <-p.poke:
		case <-p.dead:
			t.Stop()
			return ErrCrashed
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// work is one Work call under way: what a fault striking in it changes.
type work struct {
	s      *shop
	ctx    context.Context
	end    time.Time // when the work is done, unless a hold keeps the order inside
	slowed Wait      // a slow fault's counterpart: when it has acted, the work is done a beat later
	cut    bool      // a partition struck in this work: it works on until the link is back
}

// holdOf is what keeps o inside after its work, nil if nothing does.
func (a *Arena) holdOf(o *order) Wait {
	a.mu.Lock()
	defer a.mu.Unlock()
	return o.hold
}

// unhold lets o go: what it waited for has happened.
func (a *Arena) unhold(o *order) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o.hold = nil
}

// faulted marks o as failed by the arena's own fault.
func (a *Arena) faulted(o *order) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o.faulted = true
}

// stockOp records a stock command of o: what it was, its place in the inventory's order, the
// stock it read or wrote (for a sale: what it left), the fencing token it showed.
func (a *Arena) stockOp(o *order, what string, seq int64, stock int, token int64) {
	a.recordNow(history.Record{Kind: history.RecStock, What: what, Buyer: o.p.n, Order: o.id, Seq: seq, Stock: stock, Token: token})
}
