package picture

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

const ms = time.Millisecond

// spans says f's stretches of lanes, sorted: "1 wait 0-2", "-1 lock b1 3-9 left".
func spans(f *Fold, lanes ...int) string {
	var out []string
	for _, s := range f.Spans(0) {
		if !slices.Contains(lanes, s.Lane) {
			continue
		}
		x := fmt.Sprintf("%d %s %d-%d", s.Lane, s.Kind.Class(), s.From/ms, s.To/ms)
		if s.Kind == Held {
			x = fmt.Sprintf("%d lock b%d %d-%d", s.Lane, s.Holder, s.From/ms, s.To/ms)
			if s.Left {
				x += " left"
			}
			if s.Why != "" {
				x += " " + s.Why
			}
		}
		if s.Open {
			x += " open"
		}
		out = append(out, x)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// TestAPeekIsNotInside: a read before the order's Lock said yes leaves it waiting; its first read
// once granted takes it in.
func TestAPeekIsNotInside(t *testing.T) {
	f := NewFold(1, false)
	f.Add(referee.Event{At: 0, Kind: referee.EvStart, Buyer: 1, Order: 1})
	f.Add(referee.Event{At: 1 * ms, Kind: referee.EvEnter, Buyer: 1, Order: 1, Stock: 5})
	f.Add(referee.Event{At: 3 * ms, Kind: referee.EvAcquired, Buyer: 1})
	f.Add(referee.Event{At: 4 * ms, Kind: referee.EvEnter, Buyer: 1, Order: 1, Stock: 5, Granted: true})
	f.Add(referee.Event{At: 6 * ms, Kind: referee.EvExit, Buyer: 1, Order: 1})
	f.Advance(8 * ms)
	if got, want := spans(f, 1), "1 hold 3-8 open, 1 in 4-6, 1 wait 0-4"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if got := f.Marks(0, 10*ms); len(got) != 3 || got[0].Glyph() != "5" || got[1].ID != Acquired || got[2].Glyph() != "5" {
		t.Errorf("marks %v: want both reads on the inventory and the lock taken", got)
	}
}

// TestNoLockWorks: a step that takes no lock works from an order's start to its end, inside
// from its read.
func TestNoLockWorks(t *testing.T) {
	f := NewFold(1, true)
	f.Add(referee.Event{At: 0, Kind: referee.EvStart, Buyer: 1, Order: 1})
	f.Add(referee.Event{At: 2 * ms, Kind: referee.EvEnter, Buyer: 1, Order: 1, Stock: 5, NoLock: true})
	f.Add(referee.Event{At: 5 * ms, Kind: referee.EvDone, Buyer: 1, Order: 1, Sold: true})
	if got, want := spans(f, 1), "1 in 2-5, 1 work 0-5"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestAnExpiryIsDrawnWhenItRanOut: the referee sees an expiry at the next command; the hold, the
// node's bar, the owner and the mark end where the key ran out (Due).
func TestAnExpiryIsDrawnWhenItRanOut(t *testing.T) {
	f := NewFold(1, false)
	f.Add(referee.Event{At: 0, Kind: referee.EvAcquired, Buyer: 1})
	f.Add(referee.Event{At: 30 * ms, Kind: referee.EvExpired, Other: 1, Due: 20 * ms})
	f.Add(referee.Event{At: 30 * ms, Kind: referee.EvAcquired, Buyer: 2})
	f.Advance(40 * ms)
	if got, want := spans(f, 1, 2, Node(0), Owner), "-1 lock b1 0-20, -1 lock b2 30-40 open, 0 lock b1 0-20, 0 lock b2 30-40 open, 1 hold 0-20, 2 hold 30-40 open"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if m := f.Marks(15*ms, 25*ms); len(m) != 1 || m[0].ID != Expired {
		t.Errorf("marks at 15-25 ms: %v, want the expiry", m)
	}
}

// TestAQuorumHoldEndsAtItsFirstKey: on three nodes a hold ends when its first key goes; what it
// wrote on the others stays, as what it left, until their own events; the owner is the majority's.
func TestAQuorumHoldEndsAtItsFirstKey(t *testing.T) {
	f := NewFold(3, false)
	for i := range 3 {
		f.Add(referee.Event{At: time.Duration(i) * ms, Kind: referee.EvAcquired, Buyer: 1, Node: i})
	}
	if f.Owner() != 1 {
		t.Fatalf("owner %d after three of three nodes", f.Owner())
	}
	f.Add(referee.Event{At: 10 * ms, Kind: referee.EvLost, Other: 1, Node: 0})
	f.Add(referee.Event{At: 12 * ms, Kind: referee.EvReleased, Buyer: 1, Node: 1, Left: true})
	f.Advance(20 * ms)
	if got, want := spans(f, 1, Node(0), Node(1), Node(2)), "-1 lock b1 0-10, -2 lock b1 1-10, -2 lock b1 10-12 left, -3 lock b1 10-20 left open, -3 lock b1 2-10, 1 hold 0-10"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if f.Owner() != 0 || f.Holder(2) != 1 || f.Holds(1) != 1 {
		t.Errorf("owner %d, node 3's holder %d, buyer 1 holds %d: want none, 1 (what it left), 1", f.Owner(), f.Holder(2), f.Holds(1))
	}
}

// TestATakeoverEndsTheHold: another process's write over a held key ends its holder's bar there,
// "taken over", and its hold with it when no node holds its lock any more.
func TestATakeoverEndsTheHold(t *testing.T) {
	f := NewFold(1, false)
	f.Add(referee.Event{At: 0, Kind: referee.EvAcquired, Buyer: 1})
	f.Add(referee.Event{At: 5 * ms, Kind: referee.EvAcquired, Buyer: 2})
	f.Advance(9 * ms)
	if got, want := spans(f, 1, 2, Node(0)), "-1 lock b1 0-5 taken over, -1 lock b2 5-9 open, 1 hold 0-5, 2 hold 5-9 open"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestOverlapsAreTheReferees: an overlap is drawn where the referee found it, on both buyers,
// however many orders were inside together before.
func TestOverlapsAreTheReferees(t *testing.T) {
	f := NewFold(1, false)
	for n := 1; n <= 2; n++ {
		f.Add(referee.Event{At: 0, Kind: referee.EvStart, Buyer: n, Order: 1})
		f.Add(referee.Event{At: time.Duration(n) * ms, Kind: referee.EvEnter, Buyer: n, Order: 1, Stock: 5, Granted: true})
	}
	if got := spans(f, 1, 2); strings.Contains(got, "over") {
		t.Errorf("an overlap before the referee found one: %s", got)
	}
	f.Add(referee.Event{At: 7 * ms, Kind: referee.EvOverlap, Buyer: 2, Other: 1, From: 2 * ms, To: 5 * ms})
	if got := spans(f, 1, 2); !strings.Contains(got, "1 over 2-5") || !strings.Contains(got, "2 over 2-5") {
		t.Errorf("the referee's overlap: %s", got)
	}
}

// TestForgetKeepsWhatIsShown: a live session's fold forgets what ended before a moment, and
// keeps what is under way.
func TestForgetKeepsWhatIsShown(t *testing.T) {
	f := NewFold(1, false)
	for i := range 100 {
		at := time.Duration(i) * ms
		f.Add(referee.Event{At: at, Kind: referee.EvStart, Buyer: 1, Order: i})
		f.Add(referee.Event{At: at, Kind: referee.EvCommand, Buyer: 1, Order: i, Cmd: &referee.Command{Name: "GET", Stock: true}})
		f.Add(referee.Event{At: at, Kind: referee.EvDone, Buyer: 1, Order: i})
	}
	f.Add(referee.Event{At: 100 * ms, Kind: referee.EvStart, Buyer: 1, Order: 100})
	f.Forget(90 * ms)
	if n := len(f.Spans(0)); n != 11 {
		t.Errorf("%d stretches after forgetting before 90 ms, want 10 ended and 1 under way", n)
	}
	if m := f.Marks(0, time.Second); len(m) != 20 || m[0].At != 90*ms {
		t.Errorf("%d marks from %v, want 20 from 90ms", len(m), m[0].At)
	}
}

// TestANestedLockIsDrawnInsideTheHold: a re-entry (the referee's EvNested) draws its nesting under
// the hold that goes on, from the nested Lock to the Unlock that gives that entry back; the hold
// ends at the outer release alone. Before the referee said re-entries, a nested Lock's return was a
// release and a new hold (11–14 × reentrant).
func TestANestedLockIsDrawnInsideTheHold(t *testing.T) {
	f := NewFold(1, false)
	f.Add(referee.Event{At: 1 * ms, Kind: referee.EvAcquired, Buyer: 1})
	f.Add(referee.Event{At: 2 * ms, Kind: referee.EvNested, Buyer: 1, Depth: 2})
	f.Add(referee.Event{At: 5 * ms, Kind: referee.EvNested, Buyer: 1, Depth: 1})
	f.Add(referee.Event{At: 9 * ms, Kind: referee.EvReleased, Buyer: 1})
	f.Advance(10 * ms)
	if got, want := spans(f, 1, Node(0)), "-1 lock b1 1-9, 1 hold 1-9, 1 nest 2-5"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	// an entry never given back ends with the hold
	f = NewFold(1, false)
	f.Add(referee.Event{At: 1 * ms, Kind: referee.EvAcquired, Buyer: 1})
	f.Add(referee.Event{At: 2 * ms, Kind: referee.EvNested, Buyer: 1, Depth: 2})
	f.Add(referee.Event{At: 7 * ms, Kind: referee.EvExpired, Other: 1})
	f.Advance(10 * ms)
	if got, want := spans(f, 1), "1 hold 1-7, 1 nest 2-7"; got != want {
		t.Errorf("expired: got %s\nwant %s", got, want)
	}
}
