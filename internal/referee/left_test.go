package referee

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// TestWhatAHoldLeft: a quorum's hold ends when its first key is gone (a restart forgets it);
// what its call wrote on the other nodes stays, and its going is said too — deleted by its
// holder, by another process, run out, or forgotten — as an event with Left, which ends no hold
// and is no violation.
func TestWhatAHoldLeft(t *testing.T) {
	const k = lockName
	for _, tc := range []struct {
		name string
		gone func(b *hb) // what happens to buyer 1's key on the second node
		want Event       // the event that says it (At and Due aside)
	}{
		{"its holder deletes it", func(b *hb) {
			b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Node: 1, Cmds: []history.Cmd{{Name: "del", Args: []string{k}}}, Keys: []history.KeyChange{{Key: k, Before: "a"}}, Seq: 9})
		}, Event{Kind: EvReleased, Buyer: 1, Node: 1, On: "lock-2", Left: true}},
		{"another process deletes it", func(b *hb) {
			b.add(history.Record{Kind: history.RecCmd, Buyer: 2, Node: 1, Cmds: []history.Cmd{{Name: "del", Args: []string{k}}}, Keys: []history.KeyChange{{Key: k, Before: "a"}}, Seq: 9})
		}, Event{Kind: EvForeign, Buyer: 2, Other: 1, Node: 1, On: "lock-2", Left: true}},
		{"it runs out", func(b *hb) {
			b.add(history.Record{Kind: history.RecLapse, Node: 1, Keys: []history.KeyChange{{Key: k, Before: "a"}}, Due: 150 * msec})
		}, Event{Kind: EvExpired, Other: 1, Node: 1, On: "lock-2", Left: true}},
		{"its node forgets it", func(b *hb) {
			b.add(history.Record{Kind: history.RecNode, What: history.NodeRestart, Node: 1, OK: true, Keys: []history.KeyChange{{Key: k, Before: "a"}}})
		}, Event{Kind: EvLost, Other: 1, Node: 1, On: "lock-2", Left: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHB(vocab.Scenario("restart"), 3, vocab.Overlap, vocab.Oversold)
			b.h.Nodes = []string{"lock-1", "lock-2", "lock-3"}
			b.begin(1, 1).begin(2, 2)
			b.lock(1, true, func(call int) {
				for n := range 2 {
					b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Call: call, Node: n, Cmds: []history.Cmd{{Name: "set", Args: []string{k, "a"}}},
						Keys: []history.KeyChange{{Key: k, After: "a", TTL: 800 * msec}}, Seq: int64(n + 1)})
				}
			})
			b.add(history.Record{Kind: history.RecNode, What: history.NodeRestart, Node: 0, OK: true, Keys: []history.KeyChange{{Key: k, Before: "a"}}})
			tc.gone(b)
			var evs []Event
			r := NewReferee(b.h, func(e Event) { evs = append(evs, e) })
			for _, rec := range b.h.Records {
				r.Add(rec)
			}
			var left []Event
			for _, e := range evs {
				if e.Left {
					e.At, e.Due = 0, 0
					left = append(left, e)
				}
				if e.Kind == EvLost && e.Node == 0 && e.Left {
					t.Errorf("the restart that ended the hold is said as what it left: %s", e)
				}
			}
			if len(left) != 1 || !reflect.DeepEqual(left[0], tc.want) {
				t.Errorf("what the hold left is said as %v, want %v", left, tc.want)
			}
			if rep := r.Report(); !slices.Equal(rep.Found, []vocab.Kind{}) || len(rep.ForeignReleases) != 0 {
				t.Errorf("what a hold left is no violation: found %v, foreign releases %v", rep.Found, rep.ForeignReleases)
			}
			if w := left[0].Words(); w == (Event{Kind: left[0].Kind, Buyer: left[0].Buyer, Other: left[0].Other, On: left[0].On}).Words() {
				t.Errorf("what a hold left is said as a hold's end: %q", w)
			}
		})
	}
}

// TestTokenAndDueInEvents: a fenced stock command's token is in its event and its words; an
// expiry's event says when the key ran out.
func TestTokenAndDueInEvents(t *testing.T) {
	b := newHB(vocab.Scenario("pause"), 3, vocab.Overlap, vocab.Oversold)
	b.begin(1, 1)
	b.lock(1, true, b.set(1, lockName, "", "a", 200*msec))
	b.seq++
	b.add(history.Record{Kind: history.RecStock, What: history.StockRead, Buyer: 1, Order: 1, Seq: b.seq, Stock: 3, Token: 7})
	b.add(history.Record{Kind: history.RecLapse, Keys: []history.KeyChange{{Key: lockName, Before: "a"}}, Due: 201 * msec})
	b.seq++
	b.add(history.Record{Kind: history.RecStock, What: history.StockWrite, Buyer: 1, Order: 1, Seq: b.seq, Stock: 2, Token: 7})
	var got []string
	var due time.Duration
	r := NewReferee(b.h, func(e Event) {
		switch e.Kind {
		case EvEnter, EvWrite:
			got = append(got, e.Words())
		case EvExpired:
			due = e.Due
		}
	})
	for _, rec := range b.h.Records {
		r.Add(rec)
	}
	want := []string{"buyer 1 is inside: read stock 3 with token 7", "buyer 1 wrote stock 2 with token 7: order confirmed"}
	if !slices.Equal(got, want) {
		t.Errorf("the stock's events say %q, want %q", got, want)
	}
	if due != 201*msec {
		t.Errorf("the expiry's event says the key ran out at %s, want 201ms", due)
	}
}
