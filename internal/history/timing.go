package history

import "time"

// Timing sets the arena's clock: every scenario is written in multiples of TTL and Work, so a
// slower Timing shows the same story at a pace a person can follow.
type Timing struct {
	TTL  time.Duration // the lease a step gives its lock
	Work time.Duration // the business work of one normal order
	RTT  time.Duration // the simulated network round trip of every Redis command
}

// DefaultTiming is what the tests and headless runs use: short enough to run the whole matrix in
// seconds, with margins of at least a quarter TTL around every race a scenario forces.
func DefaultTiming() Timing {
	return Timing{TTL: 200 * time.Millisecond, Work: 20 * time.Millisecond, RTT: 250 * time.Microsecond}
}

// Scaled returns t with every duration multiplied by f (f > 1 slows the arena down).
func (t Timing) Scaled(f float64) Timing {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return Timing{TTL: scale(t.TTL), Work: scale(t.Work), RTT: scale(t.RTT)}
}
