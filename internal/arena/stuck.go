package arena

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// probe asks for the lock as a new buyer would, once the run's orders have ended and while units
// remain: it runs the step's own order handler (so a step that keeps its owner in the request's
// context is asked the way it expects) against a shop that sells nothing, again and again for
// 2 × TTL. If the handler never gets as far as writing the stock (a read proves nothing: a handler
// may peek before it locks), the lock is stuck: nobody can buy what is left.
func (a *Arena) probe(ctx context.Context) {
	a.mu.Lock()
	shelf := a.live.Shelf()
	a.mu.Unlock()
	if shelf <= 0 {
		a.recordNow(history.Record{Kind: history.RecProbe, What: history.ProbeStuck, OK: true})
		return
	}
	p := newProcess(a, 0)
	defer p.close()
	limit := 2 * a.t.TTL
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	got := make(chan bool, 1)
	go p.ours(func() {
		for {
			s := &probeShop{a: a, entered: make(chan struct{})}
			o := &order{p: p}
			p.order(withOrder(pctx, o), p.locker, s)
			select {
			case <-s.entered:
				got <- true
				return
			default:
			}
			if pctx.Err() != nil || p.sleep(pctx, a.t.TTL/10) != nil {
				got <- false
				return
			}
		}
	})
	var in bool
	select {
	case in = <-got:
	case <-time.After(limit + 2*a.t.TTL):
		// The handler ignores its context: kill the probe, so its commands stop, and give it
		// one more TTL to return.
		p.crash()
		select {
		case in = <-got:
		case <-time.After(a.t.TTL):
			a.recordNow(history.Record{Kind: history.RecProbe, What: history.ProbeStuck, Err: fmt.Sprintf("the order handler did not return within %v of its context's end", 3*a.t.TTL)})
			return
		}
	}
	a.recordNow(history.Record{Kind: history.RecProbe, What: history.ProbeStuck, OK: in, D: limit})
}

// probeShop is the shop of the probe's orders: reading the stock proves the order got in, and
// nothing is sold.
type probeShop struct {
	a       *Arena
	entered chan struct{}
}

func (s *probeShop) in() {
	select {
	case <-s.entered:
	default:
		close(s.entered)
	}
}

func (s *probeShop) LockKey() string { return s.a.lockKey }

// Stock tells what is on the shelf; a read is no proof of getting in (a handler may peek before
// it locks): the write is.
func (s *probeShop) Stock(ctx context.Context) (int, error) {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	return s.a.live.Shelf(), nil
}

func (s *probeShop) StockFenced(ctx context.Context, token int64) (int, error) {
	return s.Stock(ctx)
}

// Work ends at once, and a write sells nothing: it proves the order got in, which is all the
// probe asks.
func (s *probeShop) Work(ctx context.Context) error { return nil }
func (s *probeShop) SetStock(ctx context.Context, n int) error {
	s.in()
	return nil
}
func (s *probeShop) SetStockFenced(ctx context.Context, n int, token int64) error {
	s.in()
	return nil
}

func (s *probeShop) Sell(ctx context.Context) error {
	s.in()
	return nil
}
