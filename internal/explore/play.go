package explore

import (
	"context"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/steps"
)

// deadline is the longest one program may take, in TTLs, as a scenario's: its orders (at most 2
// a buyer, each coming at most 2 TTL after the last), each fault's cap (6 TTL) and hold (2 TTL),
// and the quiet tail's orders (a tail of 4 TTL; the last order may wait up to 10 TTL).
const deadline = 45

// apart is how far Play sets apart the moments of different buyers that a program puts at the
// same instant: goroutines runnable at one simulated instant race, and a seed must give one run.
const apart = 7 * time.Microsecond

// Play plays p on s: it puts p's buyers on the stage and plays each buyer's orders one after
// another, each after its wait, with its fault armed just before it starts; then, once every
// order has returned, the quiet tail (tail). It returns once every order is under way (the stage
// waits for them).
func (p Program) Play(s *arena.Stage) {
	T := s.Unit().TTL
	done := make(chan struct{}, len(p.Buyers))
	for i, b := range p.Buyers {
		var opts []arena.BuyerOption
		if b.Skew > 0 {
			opts = append(opts, arena.Skewed(Duration(b.Skew, T)))
		}
		if b.Missing {
			opts = append(opts, arena.MissingLastNode())
		}
		a := s.Buyer(opts...)
		go func() {
			defer func() { done <- struct{}{} }()
			for k, o := range b.Orders {
				if k > 0 && !s.Wait(a.OrderDone(k)) {
					return
				}
				if !s.Sleep(Duration(o.After, T) + time.Duration(i)*apart) {
					return
				}
				arm(s, a, o)
				a.Order(arena.WorkAtLeast(Duration(o.Work, T)))
			}
			if p.Tail > 0 {
				// The tail comes once every order has returned: a second request is an order
				// of its own, after the buyer's last.
				n := len(b.Orders)
				if b.Orders[n-1].Fault == arena.FaultSecond {
					n++
				}
				s.Wait(a.OrderDone(n))
			}
		}()
	}
	for range p.Buyers {
		<-done
	}
	p.tail(s)
}

// tail plays the quiet tail: nothing strikes, and a buyer of its own orders, at once and then
// every half TTL after its last order returned, until an order sells, the shelf is empty, or
// p.Tail has passed since the first (no order starts after it).
func (p Program) tail(s *arena.Stage) {
	if p.Tail <= 0 {
		return
	}
	T := s.Unit().TTL
	a := s.Buyer()
	start := time.Now()
	for k := 1; !s.Arena().SoldOut() && time.Since(start) <= Duration(p.Tail, T); k++ {
		a.Order()
		if !s.Wait(a.OrderDone(k)) {
			return
		}
		select {
		case <-a.Wrote():
			return
		default:
		}
		if !s.Sleep(T / 2) {
			return
		}
	}
}

// arm arms o's fault on buyer a, for its next order. A node move the backend cannot stage never
// strikes, and the run says so.
func arm(s *arena.Stage, a *arena.Actor, o Order) {
	if m := arena.MoveOf(o.Fault); m != nil && m.Arm != nil {
		_ = m.Arm(s, a, o.Gap)
	}
}

// Run plays p against st on a fresh embedded backend, inside bubble when one is given (a
// testing/synctest bubble: virtual time), and returns the referee's report, judged for the kinds
// judged (nil: every kind). A move that never found its point is no fault of the program's: unlike a scenario's, it
// makes no verdict incomplete (the program's words say it never struck).
func Run(st *steps.Step, p Program, judged []vocab.Kind, bubble matrix.Bubble) (rep *referee.Report, err error) {
	play := func() {
		var env redisenv.Env
		env, err = redisenv.Open("embedded", redisenv.Options{Nodes: st.Nodes})
		if err != nil {
			return
		}
		defer env.Close()
		rep, err = run(context.Background(), st, env, p, judged)
	}
	if bubble != nil {
		bubble(play)
	} else {
		play()
	}
	return rep, err
}

// run plays p against st on env, judged for judged (nil: every kind).
func run(ctx context.Context, st *steps.Step, env redisenv.Env, p Program, judged []vocab.Kind) (*referee.Report, error) {
	if judged == nil {
		judged = vocab.Kinds
	}
	t := history.DefaultTiming()
	a, err := arena.NewArena(ctx, arena.Config{Step: st, Env: env, Timing: t, Stock: p.Stock,
		Scenario: Scenario, What: p.What(), Judged: judged})
	if err != nil {
		return nil, err
	}
	defer a.Close()
	limit := deadline * t.TTL
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	s := a.NewStage(rctx, 1, t)
	p.Play(s)
	timedOut := s.Finish(limit, func() bool { return ctx.Err() != nil })
	cancel()
	s.Close()
	if timedOut != "" {
		a.TimedOut(timedOut)
	}
	return a.Report(context.WithoutCancel(ctx)), nil
}

// Simulated is how long the run of h took, on its own clock: its last record's moment.
func Simulated(h *history.History) time.Duration {
	if h == nil || len(h.Records) == 0 {
		return 0
	}
	return h.Records[len(h.Records)-1].At
}
