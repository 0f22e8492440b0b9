package arena

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// stallTick is how often the stall watch asks to run and pings the inventory.
const stallTick = 10 * time.Millisecond

// VirtualClock tells whether t, a time.Now() read in a run, is a testing/synctest bubble's: its
// clock starts at midnight UTC on 1 January 2000, and the wall clock has long passed it.
func VirtualClock(t time.Time) bool { return t.Before(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)) }

// stallWatch measures how long the machine kept the run from going on, on the wall clock (a run in
// a bubble costs no simulated time, however the machine stalls it) of a real server, or of the
// embedded backend where Config.WatchStalls asks: every stallTick it sleeps
// and then pings the inventory's server, and what that took
// beyond the tick and the quickest round trip seen is a stall — this process, or the server, was
// not run. The races a scenario
// stages keep margins of a quarter TTL (history.DefaultTiming); a stall longer than that can
// make a lease run out for the machine, not for the lock, so the run is then not judged (Report
// says so). What it cannot see: a stall of a lock node's own server while the inventory's runs
// (on the URL backend they are one server).
type stallWatch struct {
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	floor time.Duration // the least a tick ever took beyond stallTick: the server's round trip
	worst time.Duration // the longest stall so far
	at    time.Duration // when it began, from the run's start
	told  time.Duration // the stall already recorded
}

// watchStalls starts a stall watch on inv for the run that started at start.
func watchStalls(inv *redis.Client, start time.Time) *stallWatch {
	w := &stallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTimer(stallTick)
		defer t.Stop()
		first := true
		for {
			before := time.Now()
			t.Reset(stallTick)
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := inv.Ping(ctx).Err()
			cancel()
			if err != nil {
				continue // the server went away (a run's end, a URL server's hiccup): no measure
			}
			late := time.Since(before) - stallTick
			w.mu.Lock()
			if first || late < w.floor {
				w.floor, first = late, false
			}
			if late-w.floor > w.worst {
				w.worst, w.at = late-w.floor, before.Sub(start)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// blind is the record that leaves the run unjudged when a stall outlasted margin and was not
// recorded yet; ok false otherwise.
func (w *stallWatch) blind(margin time.Duration) (history.Record, bool) {
	if w == nil {
		return history.Record{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.worst <= margin || w.worst == w.told {
		return history.Record{}, false
	}
	w.told = w.worst
	return history.Record{Kind: history.RecBlind, Kinds: steps.Kinds, What: fmt.Sprintf(
		stalledWords+" for %v at %v, longer than the quarter TTL (%v) its races are staged with: "+
			"a lease could run out for the machine, not the lock; play it again on a quieter machine, or on the embedded backend (virtual time)",
		w.worst.Round(time.Millisecond), w.at.Round(time.Millisecond), margin)}, true
}

// stalledWords begin the reason of a run the machine stalled.
const stalledWords = "the machine stalled the run"

// Stalled reports whether rep's run went unjudged because the machine stalled it (see
// stallWatch): a run to play again, as its verdict would be the load's, not the lock's.
func Stalled(rep *referee.Report) bool {
	for _, b := range rep.Untracked {
		if strings.HasPrefix(b.What, stalledWords) {
			return true
		}
	}
	return false
}

// close stops the watch and waits for it.
func (w *stallWatch) close() {
	if w == nil {
		return
	}
	close(w.stop)
	<-w.done
}
