package referee

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The renewals' checker: foreign-renewal. A renewal keeps a key's value and moves its lease
// later; on the lock another process's active hold created, by a process that did not hold it at
// that moment, it keeps someone else's lock alive (a watchdog back from a pause, one its Unlock
// never stopped, a failed acquire that sets the lease anyway).

// renewal notes what a command of rec did to key kc, as prev was before it (with its hold h), if
// it extended the key's lease and left its value (PEXPIRE, a renewing script, SET XX of the same
// value): a renewal, and a foreign renewal where the key is what another process's active hold
// created (its lock proper, not a line of waiters it keeps) — a lock its renewer did not hold at
// that moment, kept alive by someone else.
func (r *Referee) renewal(rec history.Record, kc history.KeyChange, prev *rkey, h *hold) {
	if !r.renews(rec, kc, prev) {
		return
	}
	nk := nodeKey{rec.Node, kc.Key}
	if h == nil || h.ended || h.buyer == rec.Buyer || !h.keys[nk] {
		return
	}
	owner := r.proc(h.buyer)
	f := Renewal{By: rec.Buyer, Owner: h.buyer, Node: rec.Node, At: rec.At, Cmd: commandOf(rec.Cmds, rec.Node, rec.Call, &r.facts).Label,
		Dead: owner.dead, Done: owner.current == 0 && owner.orders > 0}
	r.renewed = append(r.renewed, f)
	r.announce(rec.At, vocab.ForeignRenewal, f.String(), f.By, f.Owner)
}
