package sim

import (
	"context"
	"errors"
	"sync"
	"time"

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
	active []context.CancelFunc // one per buyer still ordering
	paused bool
	wake   chan struct{}
	wg     sync.WaitGroup
}

// StartLive stocks the shelf and starts buyers buyers.
func StartLive(cfg Config, buyers int) (*Live, error) {
	a, err := NewArena(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	l := &Live{a: a, wake: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.SetBuyers(buyers)
	return l, nil
}

// Arena is the session's arena.
func (l *Live) Arena() *Arena { return l.a }

// Buyers is how many buyers are ordering.
func (l *Live) Buyers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.active)
}

// SetBuyers starts new buyers or retires the newest ones (a retired buyer finishes its order).
func (l *Live) SetBuyers(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.active) > n {
		last := len(l.active) - 1
		l.active[last]()
		l.active = l.active[:last]
	}
	for len(l.active) < n {
		ctx, cancel := context.WithCancel(l.ctx)
		l.active = append(l.active, cancel)
		p := l.a.addBuyer()
		l.wg.Add(1)
		go l.run(ctx, p, len(l.active))
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
func (l *Live) run(ctx context.Context, p *process, i int) {
	defer l.wg.Done()
	t := l.a.t
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
			continue
		}
		if l.a.shelf() <= 0 {
			if p.sleep(ctx, t.TTL) != nil {
				return
			}
			continue
		}
		octx, cancel := context.WithTimeout(ctx, 20*t.TTL)
		err := l.a.order(octx, p, nil)
		cancel()
		think := 2 * t.Work
		if errors.Is(err, steps.ErrBusy) {
			think = t.Work
		}
		if p.sleep(ctx, think) != nil {
			return
		}
	}
}

// Inject plays fault f on the current holder (see Arena.Inject).
func (l *Live) Inject(f Fault) (int, error) { return l.a.Inject(f) }

// Stop ends the session: buyers finish, every process stops, and the report of the whole
// session is returned (judged against every kind: a live session is not one scenario).
func (l *Live) Stop() *Report {
	l.cancel()
	l.wg.Wait()
	rep := l.a.Report(context.Background(), "")
	l.a.Close()
	return rep
}

// LockState is what the lock server says about the lock right now.
type LockState struct {
	Held       bool
	Value      string        // the lock's value: a process id, a token
	TTL        time.Duration // remaining; -1 when the key has no expiry
	Owner      int           // the buyer whose command created it, as the referee saw
	FailedOver bool          // the replica has been promoted
}

// Lock reads the lock's value and remaining TTL from the current primary.
func (a *Arena) Lock(ctx context.Context) LockState {
	adm := a.env.Admin()
	v, err := adm.Get(ctx, a.lockKey).Result()
	st := LockState{Held: err == nil, Value: v}
	if st.Held {
		st.TTL, _ = adm.PTTL(ctx, a.lockKey).Result()
	}
	a.mu.Lock()
	st.Owner, st.FailedOver = a.ref.owner, a.ref.failedOver
	a.mu.Unlock()
	return st
}
