// Package durable holds what lockstep's code needs to run inside a testing/synctest bubble,
// where the fake clock advances only when every goroutine of the bubble is durably blocked
// (on a channel, a timer, a sync.WaitGroup of the bubble), and a goroutine waiting for a
// sync.Mutex is not.
package durable

// Mutex is a mutual exclusion lock whose waiters are durably blocked: a one-slot channel. Use it
// where a lock is held across I/O or a wait (a Redis round trip, a simulated network delay, a
// retry's back-off). Hazard: a sync.Mutex held there while another goroutine waits for it stops a
// bubble's clock for good, and the test hangs until its -timeout; this one lets the clock run.
// The zero Mutex is not usable: make one with New.
type Mutex struct{ c chan struct{} }

// New returns an unlocked Mutex.
func New() *Mutex { return &Mutex{c: make(chan struct{}, 1)} }

// Lock waits until the mutex is free and takes it.
func (m *Mutex) Lock() { m.c <- struct{}{} }

// Unlock frees the mutex. Unlocking a free mutex panics, as sync.Mutex's does.
func (m *Mutex) Unlock() {
	select {
	case <-m.c:
	default:
		panic("durable: Unlock of an unlocked Mutex")
	}
}
