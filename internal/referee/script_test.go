package referee

import (
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// TestScriptsByTheirCall: a script's name says nothing of what it does, so the referee names it
// by the call it ran in (a lock script, an unlock script, one outside both: a renewal), and says
// what a command published on the run's channels, after what it did to the keys (step 13's
// release, then its wake-up).
func TestScriptsByTheirCall(t *testing.T) {
	const k = lockName
	sha := []string{"0123abcd", "1", k, "owner-1"}
	b := newHB(vocab.Scenario("contention"), 3, vocab.Overlap, vocab.Oversold, vocab.LostSales)
	b.begin(1, 1)
	b.lock(1, true, func(call int) {
		b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Call: call, Cmds: []history.Cmd{{Name: "evalsha", Args: sha}},
			Keys: []history.KeyChange{{Key: k, After: "owner-1", TTL: 800 * msec}}, Seq: 1})
	})
	b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Cmds: []history.Cmd{{Name: "evalsha", Args: sha}}, Keys: []history.KeyChange{{Key: k, Before: "owner-1", After: "owner-1", TTL: 800 * msec}}, Seq: 2})
	b.unlock(1, func(call int) {
		b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Call: call, Cmds: []history.Cmd{{Name: "evalsha", Args: sha}},
			Keys: []history.KeyChange{{Key: k, Before: "owner-1"}}, Seq: 3, Published: []history.Message{{Channel: k + ":released", Text: "released"}}})
	})
	var said []string
	r := NewReferee(b.h, func(e Event) {
		if e.Kind == EvCommand || e.Kind == EvPublish || e.Kind == EvReleased {
			said = append(said, string(e.Kind)+": "+e.Words())
		}
	})
	for _, rec := range b.h.Records {
		r.Add(rec)
	}
	want := []string{
		"command: buyer 1 sends EVALSHA lock, in its Lock",
		"command: buyer 1 sends EVALSHA lock, outside its Lock and Unlock calls (a renewal, or the handler's own)",
		"command: buyer 1 sends EVALSHA lock, in its Unlock",
		"released: buyer 1 releases its lock",
		`publish: buyer 1's command publishes "released" on channel ` + k + `:released: whoever subscribed to it wakes`,
	}
	if strings.Join(said, "\n") != strings.Join(want, "\n") {
		t.Errorf("said:\n%s\nwant:\n%s", strings.Join(said, "\n"), strings.Join(want, "\n"))
	}
}

// TestTheLine: a list of the run is a line of buyers, each item the buyer whose command put it
// there (step 14's waiters); the line is said when its buyers change, and not otherwise.
func TestTheLine(t *testing.T) {
	const line = lockName + ":line"
	b := newHB(vocab.Scenario("greedy"), 3, vocab.Starved)
	b.begin(2, 1).begin(3, 2)
	push := func(buyer int, before, after string) {
		b.add(history.Record{Kind: history.RecCmd, Buyer: buyer, Cmds: []history.Cmd{{Name: "evalsha", Args: []string{"ab", "1", line}}},
			Keys: []history.KeyChange{{Key: line, Before: before, After: after, TTL: -1}}, Seq: int64(len(b.h.Records))})
	}
	push(2, "", `list:"p2:a";`)
	push(3, `list:"p2:a";`, `list:"p2:a";"p3:b";`)
	push(3, `list:"p2:a";"p3:b";`, `list:"p2:a";"p3:b";`) // asks again, keeps its place
	push(2, `list:"p2:a";"p3:b";`, `list:"p3:b";`)
	push(3, `list:"p3:b";`, "")
	b.add(history.Record{Kind: history.RecCmd, Buyer: 2, Keys: []history.KeyChange{{Key: "other", Before: "dump:\x00", After: "dump:\x01"}}, Cmds: []history.Cmd{{Name: "set"}}, Seq: 99})
	var said []string
	r := NewReferee(b.h, func(e Event) {
		if e.Kind == EvLine {
			said = append(said, e.Words())
		}
	})
	for _, rec := range b.h.Records {
		r.Add(rec)
	}
	want := []string{
		"buyer 2 gets in the line (" + line + "), place 1: buyer 2",
		"buyer 3 gets in the line (" + line + "), place 2: buyer 2, buyer 3",
		"the line (" + line + ") is now: buyer 3",
		"the line (" + line + ") is empty",
	}
	if strings.Join(said, "\n") != strings.Join(want, "\n") {
		t.Errorf("said:\n%s\nwant:\n%s", strings.Join(said, "\n"), strings.Join(want, "\n"))
	}
}
