package referee

import (
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The stuck checker: the end-of-run probe's finding, or, in a live session, a lock that never
// expires, held by (or left by) an order that has ended.

func (r *Referee) stuckProbe(rec history.Record) {
	if rec.OK {
		r.stuck = stuckState{probed: true}
		return
	}
	if rec.Err != "" { // the probe could not run to the end
		r.stuck = stuckState{detail: rec.Err}
		return
	}
	owner := 0
	if h := r.activeHold(); h != nil {
		owner = h.buyer
	}
	r.stuck = stuckState{probed: true, stuck: true, owner: owner, detail: stuckSentence(rec.D, owner, r.shelf)}
}

// liveStuck judges stuck as a live session runs: a hold whose order has ended (or whose process
// died), with a key that never expires, while units remain, once another buyer's order that began
// a TTL after it was turned away — or, with nobody turned away, once its owner has had no order
// under way for a TTL. A key with a lease frees itself: it is not stuck, however long the lab shows it
// held.
func (r *Referee) liveStuck(now time.Duration) {
	if r.shelf <= 0 {
		return
	}
	for _, h := range r.holds {
		if h.ended {
			continue
		}
		p := r.proc(h.buyer)
		o := r.orders[h.order]
		var done time.Duration
		switch {
		case p.dead:
			done = p.ended
		case o != nil && o.ended:
			done = o.endedAt
		default:
			continue
		}
		forever := false
		for nk := range h.keys {
			if st := r.node(nk.node)[nk.key]; st != nil && st.deadline < 0 {
				forever = true
			}
		}
		if !forever {
			continue
		}
		turned := r.turnedAway(h.buyer, done)
		idle := p.current == 0 && p.ended >= 0 && now-p.ended >= r.h.Timing.TTL
		if !turned && !idle {
			continue
		}
		r.liveStuckSaid = liveStuckSentence(h.buyer, p.dead, turned, r.shelf)
		r.announce(now, vocab.Stuck, r.liveStuckSaid, h.buyer)
		return
	}
	// A key a Lock call wrote and no hold has (a lost reply: the Lock said no, or failed, though
	// its write landed) that never expires, once its order has ended and a later buyer was turned
	// away: an orphan nobody will ever release.
	for i := range r.nodes {
		for _, st := range r.nodes[i] {
			o := r.orders[st.lockOrder]
			if st.hold != nil || st.deadline >= 0 || o == nil || !o.ended {
				continue
			}
			if !r.turnedAway(o.buyer, o.endedAt) {
				continue
			}
			r.liveStuckSaid = orphanStuckSentence(o.buyer, r.shelf)
			r.announce(now, vocab.Stuck, r.liveStuckSaid, o.buyer)
			return
		}
	}
}

// turnedAway reports whether an order of a buyer other than owner, begun a TTL or more after done,
// was turned away: past any lease the owner's lock could have had — by Redis's TTL, or by a time
// stored in the lock that a later buyer would take it over at —, the lock still keeps buyers out.
func (r *Referee) turnedAway(owner int, done time.Duration) bool {
	return slices.ContainsFunc(r.lost, func(j Rejection) bool {
		x := r.orderOf(j)
		return j.Buyer != owner && x != nil && x.began >= done+r.h.Timing.TTL
	})
}

// orderOf is the order a rejection turned away.
func (r *Referee) orderOf(j Rejection) *rorder { return r.orders[j.Order] }
