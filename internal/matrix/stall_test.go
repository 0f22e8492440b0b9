package matrix

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestStalledSeesAMutexDeadlockAtOnce: a bubble whose goroutine waits for a mutex that a
// goroutine asleep on the bubble's clock holds can never go on (a mutex's waiter keeps the clock
// from advancing). Its real dump reads as deadlocked, which Stalled acts on after two dumps
// (stallTick apart), where it waited for stallLimit unchanged ones (2 s) before. No wall-clock
// bound is asserted: what is held is that the real dump is recognised.
func TestStalledSeesAMutexDeadlockAtOnce(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	found := make(chan struct{})
	var release sync.Mutex // the test's: a mutex's waiter, as the dump says it, ends the bubble
	release.Lock()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			mu.Lock()
			go func() { mu.Lock(); mu.Unlock() }()
			go func() {
				release.Lock()
				mu.Unlock()
			}()
			time.Sleep(time.Millisecond) // the clock stands still while the waiter waits for mu
		})
	}()
	go Stalled(stop, func() { close(found) })
	select {
	case <-found:
	case <-time.After(10 * time.Second):
		t.Fatal("no stall seen in 10 s")
	}
	if dump := newestBubble(AllStacks()); !deadlocked(dump) {
		t.Errorf("the stalled bubble's dump does not read as deadlocked:\n%s", dump)
	}
	release.Unlock()
	<-ended
}

// TestDeadlockedReadsTheDump: the states a goroutine dump gives a bubble's goroutines.
func TestDeadlockedReadsTheDump(t *testing.T) {
	g := func(state string) string { return "goroutine 7 [" + state + ", synctest bubble 3]:\nmain.f()" }
	for _, c := range []struct {
		states []string
		want   bool
	}{
		{[]string{"sleep (durable)", "sync.Mutex.Lock"}, true},
		{[]string{"chan receive (durable)", "sync.RWMutex.RLock"}, true},
		{[]string{"sleep (durable)", "chan receive (durable)"}, false}, // the clock advances
		{[]string{"sync.Mutex.Lock", "runnable"}, false},               // the holder may run
		{[]string{"sync.Mutex.Lock", "IO wait"}, false},
	} {
		var parts []string
		for _, s := range c.states {
			parts = append(parts, g(s))
		}
		if got := deadlocked(strings.Join(parts, "\n\n")); got != c.want {
			t.Errorf("%q: deadlocked %v, want %v", c.states, got, c.want)
		}
	}
}
