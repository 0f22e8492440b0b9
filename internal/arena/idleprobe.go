package arena

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// idleProbe measures, at each release of the lock on the first node, how long a waiter woken at
// that instant needs on this machine, right now, to reach the node: a goroutine woken through a
// channel sleeps one simulated round trip, waits for the node's turn behind the commands already
// queued for it (spinners' retries), and PINGs the node. Hazard: idle is judged in wall
// time, and a CPU shared with other work delays a prompt waiter (woken by a publish, say) by as
// much as a short back-off sleeps; the probe, delayed by the same machine at the same moment, is
// the allowance that keeps a starved process from being read as a sleeping waiter.
type idleProbe struct {
	a       *Arena
	node    *nodeEye
	kicks   chan time.Duration // the release times to probe, on the arena's clock
	done    chan struct{}
	pending atomic.Int32 // kicks not yet answered
	closed  atomic.Bool  // set under the arena's lock: no kick after close
}

func newIdleProbe(a *Arena, node *nodeEye) *idleProbe {
	pr := &idleProbe{a: a, node: node, kicks: make(chan time.Duration, 256), done: make(chan struct{})}
	go pr.loop()
	return pr
}

// kick asks for a probe of the release at at. It never blocks (its caller holds the arena's
// lock); a kick that finds the queue full is dropped, and its gap is judged by the grace alone.
func (pr *idleProbe) kick(at time.Duration) {
	if pr.closed.Load() {
		return
	}
	pr.pending.Add(1)
	select {
	case pr.kicks <- at:
	default:
		pr.pending.Add(-1)
	}
}

func (pr *idleProbe) loop() {
	defer close(pr.done)
	for at := range pr.kicks {
		time.Sleep(pr.a.t.RTT)
		pr.node.turn.Lock()
		pr.node.node.Admin().Ping(context.Background())
		pr.node.turn.Unlock()
		pr.a.recordNow(history.Record{Kind: history.RecProbe, What: history.ProbeIdle, Due: at, D: pr.a.Since() - at})
		pr.pending.Add(-1)
	}
}

// settle waits, for at most limit, until every kick has its answer: a report judges idle with
// the allowances of every release it counts.
func (pr *idleProbe) settle(limit time.Duration) {
	end := time.Now().Add(limit)
	for pr.pending.Load() > 0 && time.Now().Before(end) {
		time.Sleep(time.Millisecond)
	}
}

// close stops the probe; the arena's lock must not be held.
func (pr *idleProbe) close() {
	pr.a.mu.Lock() // kicks come under the arena's lock: none is half sent
	pr.closed.Store(true)
	pr.a.mu.Unlock()
	close(pr.kicks)
	<-pr.done
}
