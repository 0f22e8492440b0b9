package tui

import (
	"sync"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/referee"
)

// feedLimit bounds a feed's queue: past it, Redis command events (the spinners' flood) are
// counted and dropped, while every other event is kept.
const feedLimit = 20000

// feed carries one session's events, and the lab's readings of its lock, from the arena to the
// program, in one order: a reading is applied after every event that came before it. The arena's
// OnEvent must never block, so push only appends to a queue under a mutex and nudges the reader;
// the program reads through a re-armed tea.Cmd (next) that takes everything queued at once.
type feed struct {
	gen    int
	mu     sync.Mutex
	items  []feedItem
	drops  int
	closed bool
	rep    *referee.Report // the scenario's report, when a canned run finished
	err    error
	wake   chan struct{} // capacity 1: "something is queued"
}

func newFeed(gen int) *feed { return &feed{gen: gen, wake: make(chan struct{}, 1)} }

// feedItem is an event, a reading of the lock (lock != nil), or the start of a scenario's next
// play (play > 0: its number, where the scenario plays several).
type feedItem struct {
	ev   referee.Event
	lock *lockReading
	play int
}

// pushPlay queues the start of play n of a scenario that plays several: the events after it are
// that play's, on a fresh arena.
func (f *feed) pushPlay(n int) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.items = append(f.items, feedItem{play: n})
	f.mu.Unlock()
	f.nudge()
}

// push queues e; it is the arena's OnEvent and returns at once.
func (f *feed) push(e referee.Event) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	if len(f.items) >= feedLimit && e.Kind == referee.EvCommand {
		f.drops++
	} else {
		f.items = append(f.items, feedItem{ev: e})
	}
	f.mu.Unlock()
	f.nudge()
}

// pushLock queues a reading of the lock behind the events queued before it.
func (f *feed) pushLock(r lockReading) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.items = append(f.items, feedItem{lock: &r})
	f.mu.Unlock()
	f.nudge()
}

func (f *feed) nudge() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// finish records a canned run's outcome; the reader gets it after the run's last events.
func (f *feed) finish(rep *referee.Report, err error) {
	f.mu.Lock()
	f.rep, f.err = rep, err
	f.mu.Unlock()
	f.close()
}

// close ends the feed: the reader takes what is queued, then stops.
func (f *feed) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.nudge()
}

// feedMsg is one batch of a session's events and readings.
type feedMsg struct {
	gen   int
	items []feedItem
	drops int
	done  bool // the feed is closed and drained: do not read it again
	rep   *referee.Report
	err   error
}

// next waits for the next batch. Update re-arms it after each batch until done.
func (f *feed) next() tea.Cmd {
	return func() tea.Msg {
		for {
			f.mu.Lock()
			if len(f.items) > 0 || f.drops > 0 || f.closed {
				m := feedMsg{gen: f.gen, items: f.items, drops: f.drops, done: f.closed, rep: f.rep, err: f.err}
				f.items, f.drops = nil, 0
				f.mu.Unlock()
				return m
			}
			f.mu.Unlock()
			<-f.wake
		}
	}
}
