package sim

import (
	"testing"
	"time"
)

const msec = time.Millisecond

// TestIdleAllowance: a gap a buyer waited across is idle only when it outlasts both the grace
// and idleAllowanceX times the idle probe's delay after the same release; a loaded machine (a
// slow probe) excuses a gap that a quiet one would not.
func TestIdleAllowance(t *testing.T) {
	for _, tc := range []struct {
		name       string
		gap, probe time.Duration
		idle       bool
	}{
		{"prompt on a quiet machine", 1 * msec, 300 * time.Microsecond, false},
		{"asleep on a quiet machine", 30 * msec, 1 * msec, true},
		{"inside the grace however slow the probe", 4 * msec, 0, false},
		{"a loaded machine delayed the probe as much", 30 * msec, 12 * msec, false},
		{"asleep even for a loaded machine", 90 * msec, 12 * msec, true},
		{"no probe answered: the grace alone", 30 * msec, -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWaits()
			w.grace = 5 * msec
			var kicked []time.Duration
			w.kick = func(at time.Duration) { kicked = append(kicked, at) }
			w.began(&call{began: 0})
			w.freed(100 * msec)
			if tc.probe >= 0 {
				w.probed(100*msec, tc.probe)
			}
			w.taken(100*msec + tc.gap)
			if len(kicked) != 1 || kicked[0] != 100*msec {
				t.Fatalf("probe kicked at %v, want once, at the release", kicked)
			}
			if idle, of := w.idleGaps(); (idle == 1) != tc.idle || of != 1 {
				t.Errorf("%d of %d gaps idle, want idle %v", idle, of, tc.idle)
			}
		})
	}
}

// TestIdleShareSetsTheLongestAside: the share is the idle gaps' time over the span from the
// first release to the last, without the longest idle gap: one stall is not a sleeping waiter,
// a run of them is.
func TestIdleShareSetsTheLongestAside(t *testing.T) {
	run := func(gaps ...time.Duration) float64 {
		w := newWaits()
		w.grace = 5 * msec
		w.began(&call{began: 0})
		at := 100 * msec
		for _, g := range gaps {
			w.freed(at)
			w.probed(at, 500*time.Microsecond)
			w.taken(at + g)
			at += 100 * msec
		}
		w.freed(at) // the span: from 100 msec to here
		return w.idleShare()
	}
	if got := run(1*msec, 80*msec, 1*msec, 1*msec); got != 0 {
		t.Errorf("one stall among prompt hand-offs: share %.3f, want 0", got)
	}
	if got, want := run(40*msec, 80*msec, 20*msec, 1*msec), 0.15; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("three sleeps: share %.3f, want %.3f (40 + 20 ms of 400)", got, want)
	}
}
