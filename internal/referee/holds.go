package referee

import (
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The holds' checker: foreign-release. A lock is what its Lock call wrote, on any key of any node;
// a hold ends when a key it created is gone (or about to expire), or another process's writes
// have left it none; gone by another process's command, it is a foreign release. The holds'
// ends also say when the lock came free, which idle reads.

func (r *Referee) call(rec history.Record) {
	lock := rec.What == history.CallLock
	if !rec.End {
		if o := r.orders[rec.Order]; o != nil && lock {
			o.working = false // its work is over: from here it waits for the lock
			o.waitAgain()
		}
		r.calls[rec.Call] = &rcall{id: rec.Call, buyer: rec.Buyer, order: rec.Order, lock: lock, began: rec.At,
			wrote: map[nodeKey]bool{}, created: map[nodeKey]bool{}, named: map[nodeKey]bool{}}
		return
	}
	c := r.calls[rec.Call]
	if c == nil {
		return
	}
	delete(r.calls, rec.Call)
	o := r.orders[c.order]
	k := 0
	if o != nil {
		k = o.k
	}
	if !lock {
		// An Unlock of a hold entered more than once gives back one entry: the hold goes on
		// (one that released the lock has ended by now).
		if h := r.holdOf(c.buyer); h != nil && h.depth > 1 {
			h.depth--
			r.say(Event{At: rec.At, Kind: EvNested, Buyer: c.buyer, Order: k, Depth: h.depth})
		}
		return
	}
	if rec.Buyer == 0 {
		return
	}
	if !rec.OK || rec.Err != "" {
		r.say(Event{At: rec.At, Kind: EvRefused, Buyer: c.buyer, Order: k})
		return
	}
	r.granted++
	if o != nil {
		o.granted = true
		o.gotIn(rec.At)
	}
	if h := r.holdOf(c.buyer); h != nil {
		// A Lock granted to the process that holds the lock already is a re-entry: its
		// holder's hold goes on, whatever this call wrote (a count one more); no release, and
		// no new hold.
		h.depth++
		r.say(Event{At: rec.At, Kind: EvNested, Buyer: c.buyer, Order: k, Depth: h.depth})
		return
	}
	// The hold: what this call wrote and still holds; or, holding nothing of its own, what was
	// written for it during the call by another process, among the keys it named (a hand-over).
	keys := map[nodeKey]bool{}
	began := time.Duration(-1)
	mark := func(nk nodeKey, st *rkey, created bool) {
		keys[nk] = created
		if began < 0 || st.writtenAt < began {
			began = st.writtenAt
		}
	}
	for nk := range c.wrote {
		if st := r.node(nk.node)[nk.key]; st != nil && st.call == c.id {
			mark(nk, st, c.created[nk])
		}
	}
	handed := false
	if len(keys) == 0 {
		for nk := range c.named {
			if st := r.node(nk.node)[nk.key]; st != nil && st.writer != c.buyer && st.writer != 0 && st.writtenAt >= c.began {
				mark(nk, st, true)
				handed = true
			}
		}
	}
	if len(keys) == 0 {
		return // a Lock that says yes to nothing
	}
	h := &hold{id: len(r.holds) + 1, buyer: c.buyer, order: c.order, keys: map[nodeKey]bool{}, rewrote: map[nodeKey]time.Duration{}, began: began, depth: 1}
	if !func() bool {
		for _, created := range keys {
			if created {
				return true
			}
		}
		return false
	}() {
		for nk := range keys {
			keys[nk] = true // it created nothing: what it holds is the lock (a takeover, say)
		}
	}
	// What held those keys before has been taken over (or, rewritten by its holder, released):
	// it ends before this hold begins, so the lock is seen free in between.
	for nk := range keys {
		if st := r.node(nk.node)[nk.key]; st.hold != nil {
			r.takenOver(st.hold, nk, rec.At, st.writer)
		}
	}
	r.holds = append(r.holds, h)
	nodes := map[int]time.Duration{} // node → the lease of the lock there (-1: none)
	for nk, created := range keys {
		st := r.node(nk.node)[nk.key]
		if prev := st.hold; prev != nil && prev != h {
			r.takenOver(prev, nk, rec.At, st.writer)
		}
		st.hold = h
		h.keys[nk] = created
		ttl := time.Duration(-1)
		if st.deadline >= 0 {
			ttl = st.deadline - rec.At
		}
		if old, ok := nodes[nk.node]; !ok || (old >= 0 && (ttl < 0 || ttl > old)) {
			nodes[nk.node] = ttl
		}
	}
	for i := range r.nodes {
		if ttl, ok := nodes[i]; ok {
			r.say(Event{At: rec.At, Kind: EvAcquired, Buyer: c.buyer, Order: k, Node: i, Handed: handed, TTL: ttl})
		}
	}
	if r.freeAt >= 0 {
		if r.waitedAcross(r.freeAt, began) {
			r.gaps = append(r.gaps, gap{from: r.freeAt, length: max(began-r.freeAt, 0)})
		}
		r.freeAt = -1
	}
}

// leave takes key nk out of h, at at: gone (deleted, or about to expire), or taken by another
// process's write. by is the process whose command did it (0: Redis, a failover, the lab). A hold
// whose created key is gone ends: released by its holder, a foreign release by anyone else, with
// nobody to blame when by is 0. A hold that another's writes left with no created key ends too,
// with no blame (taken over), or released when its holder wrote it over (a hand-over).
func (r *Referee) leave(h *hold, nk nodeKey, at time.Duration, by int, gone bool) {
	r.leaveDue(h, nk, at, at, by, gone)
}

// leaveDue is leave of a key that goes at due, at or after at: a release that leaves the key to
// expire within a round trip (PEXPIRE key 1, SET … PX 1) frees the lock when it expires, for no
// Lock can succeed before.
func (r *Referee) leaveDue(h *hold, nk nodeKey, at, due time.Duration, by int, gone bool) {
	r.leaveHow(h, nk, at, due, by, gone, false)
}

// leaveHow is leaveDue; rewrote says another's command wrote the lock over rather than deleted
// it, for the foreign release's words.
func (r *Referee) leaveHow(h *hold, nk nodeKey, at, due time.Duration, by int, gone, rewrote bool) {
	created := h.keys[nk]
	delete(h.keys, nk)
	if st := r.node(nk.node)[nk.key]; st != nil && st.hold == h {
		st.hold = nil
	}
	if h.ended || !(gone && created) && h.created() {
		return
	}
	h.ended = true
	r.detach(h, nk)
	switch {
	case by == h.buyer:
		r.say(Event{At: at, Kind: EvReleased, Buyer: by, Node: nk.node})
	case by != 0 && gone:
		f := Foreign{By: by, Owner: h.buyer, Node: nk.node, At: at, Rewrote: rewrote}
		r.foreign = append(r.foreign, f)
		r.say(Event{At: at, Kind: EvForeign, Buyer: by, Other: h.buyer, Node: nk.node, Rewrote: rewrote})
		r.announce(at, vocab.ForeignRelease, f.String(), f.By, f.Owner)
	}
	r.freed(at, due)
}

// takenOver takes key nk out of h, at at, written by another's command (by) or another Lock call:
// the next Lock has taken it. If h's holder's Unlock rewrote the key before (SET … XX to "free"),
// that rewrite was its release, at the time it was made: the next Lock could succeed after it.
func (r *Referee) takenOver(h *hold, nk nodeKey, at time.Duration, by int) {
	if t, ok := h.rewrote[nk]; ok && h.keys[nk] && !h.ended {
		r.leaveDue(h, nk, at, t, h.buyer, true)
		return
	}
	r.leave(h, nk, at, by, false)
}

// freed notes that a hold ended at due (seen at at): if no other is active, the lock is free from
// due.
func (r *Referee) freed(at, due time.Duration) {
	for _, h := range r.holds {
		if !h.ended {
			return
		}
	}
	if r.freeAt >= 0 {
		return
	}
	r.freeAt = due
	if r.first < 0 {
		r.first = due
	}
	r.last = due
	r.say(Event{At: at, Kind: EvFree, Due: due})
}

// waitedAcross reports whether an order waited across the gap from to until: it had begun by
// from, and had neither got in nor ended by until, nor is it at its own work now (busy,
// not waiting, as starved counts it). An order that gave up in the gap (a Lock that tries once
// and says no) was turned away, not kept waiting: its buyer's pause before the next order is the
// shop's, not the lock's.
func (r *Referee) waitedAcross(from, until time.Duration) bool {
	for _, o := range r.ranked {
		if o.began <= from && !o.working && !(o.ended && o.endedAt <= until) && !(o.in >= 0 && o.in <= until) {
			return true
		}
	}
	return false
}

// setKey applies one change of a key by process by (0: Redis or the lab) in call, at at.
func (r *Referee) setKey(node int, kc history.KeyChange, at time.Duration, by, call int) *rkey {
	keys := r.node(node)
	if kc.Gone() {
		delete(keys, kc.Key)
		return nil
	}
	st := keys[kc.Key]
	if st == nil {
		st = &rkey{}
		keys[kc.Key] = st
	}
	st.value = kc.After
	st.deadline = -1
	if kc.TTL >= 0 {
		st.deadline = at + kc.TTL
	}
	if kc.Before != kc.After || by != 0 {
		st.writer, st.call, st.writtenAt = by, call, at
	}
	return st
}

// command applies what one command, pipeline or transaction of a process did to a lock node.
func (r *Referee) command(rec history.Record) {
	if rec.Buyer > 0 {
		r.commands += len(rec.Cmds)
		if r.commands > vocab.FloodLimit*(r.confirmed+1) {
			r.announce(rec.At, vocab.Flood, floodSentence(r.commands, r.confirmed))
		}
	}
	if rec.Buyer > 0 {
		r.say(Event{At: rec.At, Kind: EvCommand, Buyer: rec.Buyer, Node: rec.Node, Cmd: commandOf(rec.Cmds, rec.Node, rec.Call, &r.facts)})
		r.replyErrors(rec)
	}
	r.lines(rec)
	defer func() { // said after what the command did to the keys: a release, then its wake-up
		for _, m := range rec.Published {
			r.say(Event{At: rec.At, Kind: EvPublish, Buyer: rec.Buyer, Node: rec.Node, Channel: m.Channel, Sentence: m.Text})
		}
	}()
	blame := true
	if rec.Ambiguous {
		if rec.DeletesOnly {
			blame = !rec.ReplyZero // DEL answered how many it deleted
		} else {
			blame = false
			r.blind(ambiguousSays(rec.Buyer, commandOf(rec.Cmds, rec.Node, rec.Call, &r.facts).Label, r.nodeName(rec.Node)), vocab.ForeignRelease)
		}
	}
	c := r.calls[rec.Call]
	changed := map[string]bool{}
	for _, kc := range rec.Keys {
		changed[kc.Key] = true
		nk := nodeKey{rec.Node, kc.Key}
		prev := r.node(rec.Node)[kc.Key]
		var h *hold
		if prev != nil {
			h = prev.hold
		}
		soon := !kc.Gone() && kc.TTL >= 0 && kc.TTL <= r.window
		r.renewal(rec, kc, prev, h)
		by := rec.Buyer
		if !blame {
			by = 0
		}
		if prev != nil && prev.left != nil {
			if kc.Gone() || soon {
				r.leftGone(prev.left, rec.Node, rec.At, by, 0)
			}
			if kc.Gone() || soon || (kc.Before != kc.After && rec.Buyer != prev.left.buyer) {
				prev.left = nil // gone, or another's now
			}
		}
		switch {
		case h != nil && (kc.Gone() || soon):
			if !blame {
				r.say(Event{At: rec.At, Kind: EvExpired, Other: h.buyer, Node: rec.Node})
			}
			due := rec.At
			if soon {
				due += kc.TTL
			}
			t, ok := r.rewriteRelease(h, nk)
			if !ok && rec.Buyer > 0 && rec.Buyer != h.buyer && c != nil && c.lock && !h.ended && h.keys[nk] {
				// a waiter's Lock deleted a key its holder's Unlock had rewritten, even inside
				// the work (a nested Unlock that took the holder out of a set, a semaphore
				// that is not reentrant): what the holder's command left, the waiter took out
				t, ok = h.rewrote[nk]
			}
			if ok && rec.Buyer != h.buyer {
				// its holder's Unlock had rewritten the key (taken itself out of a set a
				// waiter was in, "free"): that was its release; whoever deletes the key after
				// it (the waiter taking itself out) deletes nobody's lock
				r.leaveDue(h, nk, rec.At, t, h.buyer, true)
			} else if rec.Buyer > 0 || !blame {
				r.leaveDue(h, nk, rec.At, due, by, true)
			}
		case h != nil && kc.Before != kc.After && h.buyer != rec.Buyer && rec.Buyer > 0 && c != nil && c.lock && h.keys[nk]:
			// another's Lock wrote into the lock and left it there (a waiter adding itself to a
			// semaphore, a takeover): the hold is its holder's until that Lock returns holding
			// the key (call), not at a waiter's write
		case h != nil && kc.Before != kc.After && h.buyer != rec.Buyer && rec.Buyer > 0 && (c == nil || !c.lock):
			// another process's command outside its Lock wrote over the lock (a blind SET of
			// "free"): it took the lock from its holder, a foreign release as a DEL is
			prev.hold = nil
			if t, ok := r.rewriteRelease(h, nk); ok {
				r.leaveDue(h, nk, rec.At, t, h.buyer, true)
			} else {
				r.leaveHow(h, nk, rec.At, rec.At, rec.Buyer, true, true)
			}
		case h != nil && kc.Before != kc.After && h.buyer != rec.Buyer && rec.Buyer > 0:
			prev.hold = nil
			r.takenOver(h, nk, rec.At, rec.Buyer)
		case h != nil && !h.ended && h.keys[nk] && kc.Before != kc.After && h.buyer == rec.Buyer && c != nil && !c.lock:
			// its holder's Unlock rewrote the lock ("free", a count one less): a release if
			// the next Lock can succeed after it (takenOver)
			h.rewrote[nk] = rec.At
		}
		st := r.setKey(rec.Node, kc, rec.At, rec.Buyer, rec.Call)
		if st != nil && kc.Before != kc.After {
			st.lockOrder = 0
			if c != nil && c.lock {
				st.lockOrder = c.order
			}
		}
		if st != nil && h != nil && !h.ended && h.keys[nk] {
			st.hold = h
		}
		if c != nil && c.lock && st != nil {
			c.wrote[nk] = true
			if kc.Before == "" {
				c.created[nk] = true
			}
		}
	}
	if c != nil {
		for _, cmd := range rec.Cmds {
			for _, a := range cmd.Args {
				if _, ok := r.node(rec.Node)[a]; ok {
					c.named[nodeKey{rec.Node, a}] = true
				}
			}
		}
	}
	// A command of a Lock call that named a key another process holds, and left it as it was:
	// the order found the lock taken. A key an active hold has says whose lock it is; a key no
	// hold has (a lost reply's orphan) says so by its writer, but only of a command that changed
	// nothing itself: one that wrote its own lock (a retry that takes it back) found nothing taken
	// in a line of waiters another buyer wrote.
	if c != nil && c.lock && rec.Buyer > 0 {
		o := r.orders[c.order]
		if o != nil && !o.waited {
			if owner := r.takenBy(rec, c, changed); owner != 0 {
				o.waited = true
				r.say(Event{At: rec.At, Kind: EvWaiting, Buyer: rec.Buyer, Order: o.k, Other: owner, Node: rec.Node})
			}
		}
	}
}

// takenBy is the buyer whose lock command rec of call c found taken (0: none): a key it named
// held by another's active hold — left as it was, or written into and held still (a waiter that
// adds itself to a semaphore: it waits, whatever it wrote) —, or, where it changed nothing, a key
// written by another.
func (r *Referee) takenBy(rec history.Record, c *rcall, changed map[string]bool) int {
	weak := 0
	for _, cmd := range rec.Cmds {
		for _, a := range cmd.Args {
			st := r.node(rec.Node)[a]
			if st == nil {
				continue
			}
			if changed[a] {
				if h := st.hold; h != nil && !h.ended && h.buyer != rec.Buyer {
					return h.buyer
				}
				continue
			}
			if h := st.hold; h != nil {
				if h.buyer != rec.Buyer || h.order != c.order {
					return h.buyer
				}
				continue
			}
			if weak == 0 && st.writer != 0 && st.writer != rec.Buyer {
				weak = st.writer
			}
		}
	}
	if len(changed) > 0 {
		return 0
	}
	return weak
}

// rewriteRelease is when h's holder released its lock on nk by rewriting the key ("free", itself
// taken out of a set a waiter is in), if it did: its Unlock rewrote the key after its order's
// stock write, or the order has ended since. Hazard: a nested Unlock's count one less, inside the
// work, is no release: a delete of the key by another after it is a foreign release.
func (r *Referee) rewriteRelease(h *hold, nk nodeKey) (time.Duration, bool) {
	if h == nil || h.ended || !h.keys[nk] {
		return 0, false
	}
	t, ok := h.rewrote[nk]
	o := r.orders[h.order]
	return t, ok && o != nil && (o.wrote && o.wroteAt <= t || o.ended)
}

// holdOf is st's hold, nil for no key.
func (st *rkey) holdOf() *hold {
	if st == nil {
		return nil
	}
	return st.hold
}

// lapse applies keys that ran out (or lost an expired field) on their own.
func (r *Referee) lapse(rec history.Record) {
	for _, kc := range rec.Keys {
		st := r.node(rec.Node)[kc.Key]
		nk := nodeKey{rec.Node, kc.Key}
		if t, ok := r.rewriteRelease(st.holdOf(), nk); ok && kc.Gone() {
			// its holder's Unlock had rewritten it ("free", KEEPTTL) and no Lock took it before
			// it ran out: the lock was free from the rewrite
			r.leaveDue(st.hold, nk, rec.At, t, st.hold.buyer, true)
		} else if st != nil && st.hold != nil && kc.Gone() {
			owner := st.hold.buyer
			r.say(Event{At: rec.At, Kind: EvExpired, Other: owner, Node: rec.Node, Due: rec.Due})
			r.lapsed(st.hold, nodeKey{rec.Node, kc.Key}, rec.At, rec.Due)
		} else if st != nil && st.left != nil && kc.Gone() {
			r.leftGone(st.left, rec.Node, rec.At, 0, rec.Due)
		} else if kc.Gone() {
			r.say(Event{At: rec.At, Kind: EvExpired, Node: rec.Node, Due: rec.Due})
		}
		if !kc.Gone() || st != nil {
			r.setKey(rec.Node, kc, rec.Due, 0, 0)
		}
	}
}

// lapsed takes key nk out of h, seen gone at at, run out at due.
func (r *Referee) lapsed(h *hold, nk nodeKey, at, due time.Duration) {
	created := h.keys[nk]
	delete(h.keys, nk)
	if st := r.node(nk.node)[nk.key]; st != nil && st.hold == h {
		st.hold = nil
	}
	if h.ended || !created && h.created() {
		return
	}
	h.ended = true
	r.detach(h, nk)
	r.freed(at, due)
}

// detach lets go of the keys h still had when it ended at key end. A key its call created on
// another node stays there until it goes: it is kept as what h left (rkey.left), so that its
// going is said too (an event with Left), though it ends no hold and blames nobody.
func (r *Referee) detach(h *hold, end nodeKey) {
	for k, created := range h.keys {
		if st := r.node(k.node)[k.key]; st != nil && st.hold == h {
			st.hold = nil
			if created && k.node != end.node {
				st.left = h
			}
		}
	}
}

// leftGone says that what hold h left on node is gone, at at: deleted by by (its holder or
// another process), or, by 0, run out at due.
func (r *Referee) leftGone(h *hold, node int, at time.Duration, by int, due time.Duration) {
	switch {
	case by == h.buyer:
		r.say(Event{At: at, Kind: EvReleased, Buyer: by, Node: node, Left: true})
	case by != 0:
		r.say(Event{At: at, Kind: EvForeign, Buyer: by, Other: h.buyer, Node: node, Left: true})
	default:
		r.say(Event{At: at, Kind: EvExpired, Other: h.buyer, Node: node, Due: due, Left: true})
	}
}

// nodeChange applies a failover or a restart: the node lost Keys.
func (r *Referee) nodeChange(rec history.Record) {
	kind := EvFailover
	if rec.What == history.NodeRestart {
		kind = EvRestart
	}
	r.say(Event{At: rec.At, Kind: kind, Node: rec.Node, OK: rec.OK, Err: rec.Err, D: rec.D})
	if !rec.OK {
		return
	}
	if rec.What == history.NodeFailover {
		r.failedOver = true
	}
	for _, kc := range rec.Keys {
		st := r.node(rec.Node)[kc.Key]
		// A key the node lost, or has with another value — an older one, from writes the
		// replica had before its link was held back — is no longer what its hold wrote.
		lost := kc.Gone() || kc.After != kc.Before
		if st != nil && st.hold != nil && lost {
			r.say(Event{At: rec.At, Kind: EvLost, Other: st.hold.buyer, Node: rec.Node})
			r.leave(st.hold, nodeKey{rec.Node, kc.Key}, rec.At, 0, true)
		} else if st != nil && st.left != nil && lost {
			r.say(Event{At: rec.At, Kind: EvLost, Other: st.left.buyer, Node: rec.Node, Left: true})
		}
		r.setKey(rec.Node, kc, rec.At, 0, 0)
	}
}

func (r *Referee) process(rec history.Record) {
	var kind EventKind
	switch rec.What {
	case history.ProcessCrashed:
		kind = EvCrashed
		p := r.proc(rec.Buyer)
		p.dead = true
		if p.ended < 0 {
			p.ended = rec.At
		}
	case history.ProcessFrozen:
		kind = EvFrozen
	case history.ProcessThawed:
		kind = EvThawed
	case history.ProcessPartitioned:
		kind = EvPartitioned
	case history.ProcessHealed:
		kind = EvHealed
	default:
		return
	}
	r.say(Event{At: rec.At, Kind: kind, Buyer: rec.Buyer, D: rec.D, Sentence: rec.Says})
}
