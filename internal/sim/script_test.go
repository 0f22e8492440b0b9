package sim

import (
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/steps"
)

// TestScriptsByTheirCall: a script's name says nothing of what it does, so the referee names it
// by the call it ran in (a lock script, an unlock script, one outside both: a renewal), and says
// what a command published on the run's channels, after what it did to the keys (step 13's
// release, then its wake-up).
func TestScriptsByTheirCall(t *testing.T) {
	const k = LockName
	sha := []string{"0123abcd", "1", k, "owner-1"}
	b := newHB(steps.Contention, 3)
	b.begin(1, 1)
	b.lock(1, true, func(call int) {
		b.add(Record{Kind: RecCmd, Buyer: 1, Call: call, Cmds: []Cmd{{Name: "evalsha", Args: sha}},
			Keys: []KeyChange{{Key: k, After: "owner-1", TTL: 800 * msec}}, Seq: 1})
	})
	b.add(Record{Kind: RecCmd, Buyer: 1, Cmds: []Cmd{{Name: "evalsha", Args: sha}}, Keys: []KeyChange{{Key: k, Before: "owner-1", After: "owner-1", TTL: 800 * msec}}, Seq: 2})
	b.unlock(1, func(call int) {
		b.add(Record{Kind: RecCmd, Buyer: 1, Call: call, Cmds: []Cmd{{Name: "evalsha", Args: sha}},
			Keys: []KeyChange{{Key: k, Before: "owner-1"}}, Seq: 3, Published: []Message{{Channel: k + ":released", Text: "released"}}})
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
