package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/sim"
)

// TestLockLineSaysOneReading: owner and TTL come first and the key last, and every part of the
// line comes from one reading, so it never says "free" beside a value or an owner beside another's.
func TestLockLineSaysOneReading(t *testing.T) {
	m := liveArena(t, 4)
	a := m.ar
	a.lockKey = "lockstep:1a860bde:lock:product:1001"
	a.apply(sim.Event{At: time.Millisecond, Kind: sim.EvAcquired, Buyer: 5}) // the picture moved on
	a.setLock(lockReading{st: sim.LockState{Held: true, Value: "eeffe9b7bbd03aa1", TTL: 1850 * time.Millisecond, Owner: 3}, at: time.Millisecond})
	l := a.lockLine(80)
	if !strings.HasPrefix(l, "LOCK owner buyer 3 · TTL 1.85s left · value \"eeffe9b7bbd03…\" · key lockstep:") || ansi.StringWidth(l) > 80 {
		t.Errorf("held: %q", l)
	}
	a.setLock(lockReading{st: sim.LockState{Held: false, Owner: 3}, at: 2 * time.Millisecond})
	if l := a.lockLine(100); !strings.Contains(l, "free: buyer 3's lock expired in Redis, and buyer 3 does not know yet") || strings.Contains(l, "value") {
		t.Errorf("expired: %q", l)
	}
	a.setLock(lockReading{st: sim.LockState{Held: true, Value: "old", TTL: time.Second, Owner: 2}, at: time.Millisecond})
	if l := a.lockLine(100); strings.Contains(l, "old") {
		t.Errorf("an older reading replaced a newer one: %q", l)
	}
	a.setLock(lockReading{st: sim.LockState{}, at: 3 * time.Millisecond})
	if l := a.lockLine(100); !strings.HasPrefix(l, "LOCK free · key") {
		t.Errorf("free: %q", l)
	}
	a.setLock(lockReading{st: sim.LockState{Held: true, Value: "buyer-4", TTL: -1, Owner: 4}, at: 4 * time.Millisecond})
	if l := a.lockLine(100); !strings.HasPrefix(l, "LOCK owner buyer 4 · no TTL: held until deleted") {
		t.Errorf("no TTL: %q", l)
	}
	// A canned run's reading takes its owner from the picture, at the place in the feed it has.
	a.setLock(lockReading{st: sim.LockState{Held: true, Value: "x", TTL: time.Second}, at: 5 * time.Millisecond, pictureOwner: true})
	if l := a.lockLine(100); !strings.HasPrefix(l, "LOCK owner buyer 5 ·") {
		t.Errorf("picture's owner: %q", l)
	}
}

// TestStepOneCannotFailOver: f on a step that takes no lock says so and arms nothing.
func TestStepOneCannotFailOver(t *testing.T) {
	m := liveArena(t, 0)
	press(m, "f")
	if m.ar.armed || !strings.Contains(m.msg, "takes no lock") || strings.Contains(m.View(), "armed:") {
		t.Fatalf("f on step 1: armed %v, msg %q", m.ar.armed, m.msg)
	}
}

// TestRetiredBuyersAreNamedSo: after - the LOCK line and the lane say a retired buyer is retired.
func TestRetiredBuyersAreNamedSo(t *testing.T) {
	m := liveArena(t, 4)
	a := m.ar
	a.roster.set(12)
	a.roster.set(1)
	a.apply(sim.Event{At: time.Millisecond, Kind: sim.EvAcquired, Buyer: 12})
	a.setLock(lockReading{st: sim.LockState{Held: true, Value: "t", TTL: time.Second, Owner: 12}, at: time.Millisecond})
	if l := a.lockLine(100); !strings.Contains(l, "owner buyer 12 (retired)") {
		t.Errorf("%q", l)
	}
	if a.roster.retired[1] || !a.roster.retired[2] || fmt.Sprint(a.roster.active) != "[1]" {
		t.Errorf("roster %+v", a.roster)
	}
}
