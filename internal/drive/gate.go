package drive

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
)

// gate is a drive session's arena.Gate: each buyer's orders' commands wait in it, in the order
// they came, until a move sends the buyer's first. What a process's own goroutines send outside
// its Lock and Unlock calls (a watchdog's renewal, a lease guard's) is the lock's own machinery on
// its own clock: it goes after its round trip, unheld, unless the process is frozen or cut off
// (the p and i keys, in the process's network before the gate). Held, it would make every held
// write a stop-the-world pause: the watchdog that cures slow work (08) would fall to slow's moves.
// Hazard: goroutines that reach the gate at one simulated instant race; their order is settled by
// what they are (sortKey), never by which ran first, so the same moves give the same queue.
type gate struct {
	mu    sync.Mutex
	held  []*held
	ended map[int]bool // buyers whose orders the session's end has ended: theirs wait no more
	free  bool         // the orders have ended: every command goes after its round trip
	rtt   time.Duration
	words *speaker
}

// held is one command waiting at the gate.
type held struct {
	arena.Held
	at    time.Time // when it came, on the bubble's clock
	words string    // what it is, in words
	go_   chan error
}

// errEnded is what a command held when the session ended answers: it never left.
var errEnded = errors.New("the drive session ended before this command was sent")

// newGate is a gate whose unheld commands take rtt, each said by w.
func newGate(w *speaker, rtt time.Duration) *gate {
	return &gate{words: w, ended: map[int]bool{}, rtt: rtt}
}

// Pass holds c until a move sends it, ctx ends or its process dies.
func (g *gate) Pass(ctx context.Context, c arena.Held, gone <-chan struct{}) error {
	h := &held{Held: c, at: time.Now(), go_: make(chan error, 1)}
	g.mu.Lock()
	if g.free || c.In == "" && c.Node >= 0 {
		g.mu.Unlock()
		t := time.NewTimer(g.rtt + apart(c))
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-gone:
			return arena.ErrCrashed
		}
	}
	if g.ended[c.Buyer] {
		g.mu.Unlock()
		return errEnded
	}
	h.words = g.words.command(c)
	g.held = append(g.held, h)
	g.mu.Unlock()
	select {
	case err := <-h.go_:
		return err
	case <-ctx.Done():
		g.drop(h)
		return ctx.Err()
	case <-gone:
		g.drop(h)
		return arena.ErrCrashed
	}
}

// apart sets apart the moments of unheld commands that leave at one instant (a quorum lock's
// renewals, one per node; two buyers' watchdogs on one tick): goroutines runnable at one
// simulated instant race, so each buyer's command on each node lands a microsecond apart from any
// other's, and the same moves give the same history.
func apart(c arena.Held) time.Duration {
	return time.Duration((c.Buyer*8+c.Node+1)%256) * time.Microsecond
}

func (g *gate) drop(h *held) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.held, h); i >= 0 {
		g.held = slices.Delete(g.held, i, i+1)
	}
}

// queue is buyer n's commands waiting, first first: by when they came, then by what they are.
func (g *gate) queue(n int) []*held {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*held
	for _, h := range g.held {
		if h.Buyer == n {
			out = append(out, h)
		}
	}
	slices.SortStableFunc(out, func(a, b *held) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.sortKey(), b.sortKey())
	})
	return out
}

// sortKey orders two commands of one buyer that came at one instant: the order's own before a
// goroutine's of its process (a watchdog's), then by what they say.
func (h *held) sortKey() string {
	k := "1"
	if h.In != "" || h.Node < 0 {
		k = "0"
	}
	return k + h.words
}

// send lets buyer n's first command go, and returns it (nil when n has none waiting).
func (g *gate) send(n int) *held {
	h, _ := g.answer(n, false)
	return h
}

// answer lets buyer n's first command go (sent) — or, where lockless, if it is part of a Lock
// call, answers it errEnded: it never leaves — and returns it (nil when n has none waiting).
func (g *gate) answer(n int, lockless bool) (h *held, sent bool) {
	q := g.queue(n)
	if len(q) == 0 {
		return nil, false
	}
	h = q[0]
	g.drop(h)
	if lockless && h.In == history.CallLock {
		h.go_ <- errEnded
		return h, false
	}
	h.go_ <- nil
	return h, true
}

// end ends buyer n's part: every command it has waiting, and every one it sends from now on,
// answers errEnded.
func (g *gate) end(n int) {
	g.mu.Lock()
	g.ended[n] = true
	g.mu.Unlock()
	for _, h := range g.queue(n) {
		g.drop(h)
		h.go_ <- errEnded
	}
}

// open lets every command go after its round trip: the session's orders have ended, and what is
// left runs as it would unheld.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.free = true
}
