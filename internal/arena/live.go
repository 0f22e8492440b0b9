package arena

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// Live is an open-ended session, the lab's: buyers keep placing orders while stock remains, and a
// learner injects faults into whoever holds the lock. Everything it does reaches the subscriber
// as events (Config.OnEvent).
type Live struct {
	a      *Arena
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	active []*liveBuyer // buyers still ordering, oldest first
	stage  *Stage
	paused bool
	wake   chan struct{}
	busy   int // orders under way
	wg     sync.WaitGroup
}

// liveBuyer is one buyer of a live session; retired, it finishes the order under way and stops.
type liveBuyer struct {
	p       *process
	retired chan struct{}
}

// StartLive stocks the shelf and starts buyers buyers.
func StartLive(cfg Config, buyers int) (*Live, error) {
	a, err := NewArena(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	l := &Live{a: a, wake: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.stage = a.NewStage(l.ctx, 1, a.t)
	l.stage.starts()
	l.SetBuyers(buyers)
	l.wg.Add(1)
	go l.watchStuck()
	return l, nil
}

// Arena is the session's arena.
func (l *Live) Arena() *Arena { return l.a }

// Active lists the buyers still ordering, by number (a retired buyer is not among them).
func (l *Live) Active() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	ns := make([]int, len(l.active))
	for i, b := range l.active {
		ns[i] = b.p.n
	}
	return ns
}

// Buyers is how many buyers are ordering.
func (l *Live) Buyers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.active)
}

// SetBuyers starts new buyers or retires the newest ones. A retired buyer finishes the order it
// has under way, unlock included, and places no other: retiring must never be the fault.
func (l *Live) SetBuyers(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.active) > n {
		last := len(l.active) - 1
		close(l.active[last].retired)
		l.active = l.active[:last]
	}
	for len(l.active) < n {
		b := &liveBuyer{p: l.a.addBuyer(), retired: make(chan struct{})}
		l.active = append(l.active, b)
		l.wg.Add(1)
		go l.run(b, len(l.active))
	}
}

// SetPaused stops (true) or resumes new orders; orders under way go on.
func (l *Live) SetPaused(paused bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paused == paused {
		return
	}
	l.paused = paused
	if !paused {
		close(l.wake)
		l.wake = make(chan struct{})
	}
}

// ordering counts an order that begins (d 1) or ends (d -1).
func (l *Live) ordering(d int) {
	l.mu.Lock()
	l.busy += d
	l.mu.Unlock()
}

// Quiet holds new orders back until none is under way (at most cap), runs arm, and lets orders
// come again (unless they were held already), one buyer after another as at the start. A move
// armed so strikes the next Lock as its scenario has it: a lock taken free, with nobody waiting
// for it (no line of waiters a fair lock would keep behind the stricken holder), the other buyers
// arriving after it.
func (l *Live) Quiet(cap time.Duration, arm func() error) error {
	was := l.Paused()
	l.SetPaused(true)
	for end := time.Now().Add(cap); time.Now().Before(end) && l.ctx.Err() == nil; {
		l.mu.Lock()
		busy := l.busy
		l.mu.Unlock()
		if busy == 0 {
			break
		}
		time.Sleep(l.a.t.TTL / 20)
	}
	if l.ctx.Err() != nil {
		return errors.New("the session has stopped")
	}
	err := arm()
	if !was {
		l.SetPaused(false)
	}
	return err
}

// Paused reports whether new orders are held back.
func (l *Live) Paused() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused
}

func (l *Live) gate() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.paused, l.wake
}

// run is one buyer's life: order, think, order again, while stock remains. The i-th buyer starts
// a little after the one before, so arrivals spread out.
func (l *Live) run(b *liveBuyer, i int) {
	defer l.wg.Done()
	p, t := b.p, l.a.t
	// ctx ends when the buyer retires or the session stops; the order under way does not see it.
	ctx, cancel := context.WithCancel(l.ctx)
	defer cancel()
	go func() {
		select {
		case <-b.retired:
			cancel()
		case <-ctx.Done():
		}
	}()
	if p.sleep(ctx, time.Duration(i-1)*t.Work/3) != nil {
		return
	}
	for !p.isDead() {
		if paused, wake := l.gate(); paused {
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
			// orders come again one buyer after another, as at the start
			if p.sleep(ctx, time.Duration(i-1)*t.Work/3) != nil {
				return
			}
			continue
		}
		if l.a.SoldOut() {
			if p.sleep(ctx, t.TTL) != nil {
				return
			}
			continue
		}
		octx, ocancel := context.WithTimeout(l.ctx, 20*t.TTL)
		l.ordering(1)
		err := l.a.order(octx, p, orderPlan{})
		l.ordering(-1)
		ocancel()
		think := 2 * t.Work
		if errors.Is(err, steps.ErrBusy) {
			think = t.Work
		}
		if p.sleep(ctx, think) != nil {
			return
		}
	}
}

// watchStuck lets time pass in the session's history, a quarter TTL at a time: the referee
// judges stuck on it (a lock whose owner is done with it, held a TTL on, that never expires).
func (l *Live) watchStuck() {
	defer l.wg.Done()
	tick := time.NewTicker(l.a.t.TTL / 4)
	defer tick.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-tick.C:
		}
		l.a.Tick()
	}
}

// Tick records that time has passed, with nothing else to say: the referee judges a live stuck
// on it (a lock whose owner is done with it, held a TTL on, that never expires). A live session
// ticks every quarter TTL; a drive session, each time it lets time pass.
func (a *Arena) Tick() { a.recordNow(history.Record{Kind: history.RecClock}) }

// Stage is the session's stage: the moves the lab's fault keys play on its holder, under the
// session's long-stop.
func (l *Live) Stage() *Stage { return l.stage }

// Halt tells the session to end, without waiting for it (Stop waits): a Quiet under way stops
// waiting, and buyers place no new order.
func (l *Live) Halt() { l.cancel() }

// Stop ends the session: buyers finish, every process stops, and the report of the whole
// session is returned (judged against every kind: a live session is not one scenario).
func (l *Live) Stop() *referee.Report {
	l.cancel()
	l.wg.Wait()
	l.stage.orders.Wait()
	l.stage.Close()
	rep := l.a.Report(context.Background())
	l.a.Close()
	return rep
}
