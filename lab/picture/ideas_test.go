package picture

import (
	"testing"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

// TestOneColourOneMeaning: no two kinds of stretch share a colour on either screen, but a lock
// held (a node's hold) and holding it (a buyer's), which are one meaning; the page's holders'
// shades are none of the other kinds' colours.
func TestOneColourOneMeaning(t *testing.T) {
	term, page := map[string]Kind{}, map[string]Kind{}
	same := func(a, b Kind) bool { return a == b || (a == Hold && b == Held) || (a == Held && b == Hold) }
	for k, c := range Colours {
		if o, ok := term[c.Term]; ok && !same(o, Kind(k)) {
			t.Errorf("the terminal draws %s and %s in colour %s", o.Class(), Kind(k).Class(), c.Term)
		}
		if o, ok := page[c.Page]; ok && !same(o, Kind(k)) {
			t.Errorf("the page draws %s and %s in %s", o.Class(), Kind(k).Class(), c.Page)
		}
		term[c.Term], page[c.Page] = Kind(k), Kind(k)
	}
	for _, s := range HeldShades {
		if k, ok := page[s]; ok && k != Held && k != Hold {
			t.Errorf("a holder's shade %s is %s's colour", s, k.Class())
		}
	}
}

// TestIdeasAreDrawn: a waiter's first try after a wake-up is drawn as woken, its later ones as
// tries; a buyer that joins a line is drawn so; a skewed clock is on its buyer's lane; a kind the
// scenario does not judge is no violation's mark.
func TestIdeasAreDrawn(t *testing.T) {
	f := NewFold(1, false)
	try := &referee.Command{Name: "EVALSHA", Script: true, OnLock: true, In: "lock"}
	f.Add(referee.Event{At: 0, Kind: referee.EvFault, Buyer: 2, Fault: "clock-skew"})
	f.Add(referee.Event{At: 0, Kind: referee.EvAcquired, Buyer: 1})
	f.Add(referee.Event{At: 1 * ms, Kind: referee.EvStart, Buyer: 2, Order: 1})
	f.Add(referee.Event{At: 2 * ms, Kind: referee.EvLine, Buyer: 2, Line: []int{2}})
	f.Add(referee.Event{At: 3 * ms, Kind: referee.EvPublish, Buyer: 1})
	got := func(e referee.Event) ID {
		d := f.Add(e)
		if len(d) == 0 {
			return None
		}
		return d[0].ID
	}
	if m := got(referee.Event{At: 4 * ms, Kind: referee.EvCommand, Buyer: 2, Cmd: try}); m != Woken {
		t.Errorf("the try after a wake-up: %s, want %s", m.Glyph(), Woken.Glyph())
	}
	if m := got(referee.Event{At: 5 * ms, Kind: referee.EvCommand, Buyer: 2, Cmd: try}); m != Try {
		t.Errorf("the next try: %s, want %s", m.Glyph(), Try.Glyph())
	}
	if m := got(referee.Event{At: 6 * ms, Kind: referee.EvViolation, Viol: "overlap", NotJudgedBy: "error"}); m != Seen {
		t.Errorf("a kind error does not judge: %s, want %s", m.Glyph(), Seen.Glyph())
	}
	if m := got(referee.Event{At: 6 * ms, Kind: referee.EvViolation, Viol: "stuck"}); m != Violation {
		t.Errorf("a judged kind: %s, want %s", m.Glyph(), Violation.Glyph())
	}
	want := map[ID]int{Skewed: 2, Queued: 2}
	for _, d := range f.Marks(0, 10*ms) {
		if lane, ok := want[d.ID]; ok {
			if d.Lane != lane {
				t.Errorf("%s on lane %d, want %d", d.ID.Glyph(), d.Lane, lane)
			}
			delete(want, d.ID)
		}
	}
	for id := range want {
		t.Errorf("no %s drawn", id.Glyph())
	}
	for name, idea := range Ideas {
		if !idea.Lane && !idea.Spins && !idea.Nodes && !idea.Mark.OnTerminal() {
			t.Errorf("idea %q is a mark the terminal does not draw", name)
		}
	}
}
