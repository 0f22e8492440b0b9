package picture

import "time"

// The fold's bookkeeping of stretches: a buyer's, a node's hold, and the Owner lane's.

// Holds is how many nodes hold buyer n's lock (what an ended hold left there included).
func (f *Fold) Holds(n int) int { return f.holds(n) }

// holds is how many nodes hold buyer n's lock.
func (f *Fold) holds(n int) int {
	k := 0
	for _, x := range f.nodes {
		if x.holder == n && n != 0 {
			k++
		}
	}
	return k
}

// Holder is the buyer whose lock node i holds (what an ended hold left there included), 0 if
// none.
func (f *Fold) Holder(i int) int {
	if i < 0 || i >= len(f.nodes) {
		return 0
	}
	return f.nodes[i].holder
}

// Owner is the buyer a majority of the nodes gives the lock, 0 if none.
func (f *Fold) Owner() int { return f.owner.Holder }

// setOwner moves the Owner lane to the majority's holder, if it changed, at at.
func (f *Fold) setOwner(at time.Duration, event int) {
	o := 0
	for _, x := range f.nodes {
		if x.holder != 0 && f.holds(x.holder)*2 > len(f.nodes) {
			o = x.holder
			break
		}
	}
	if o == f.owner.Holder {
		return
	}
	if f.owner.Holder != 0 {
		s := f.owner
		s.To = max(at, s.From)
		f.spans = append(f.spans, s)
	}
	f.owner = Span{Lane: Owner, Kind: Held, From: at, Holder: o, Event: event}
}

// begin opens a stretch of kind k on buyer n's lane, unless one is open.
func (f *Fold) begin(n int, k Kind, at time.Duration, event int) {
	b := f.buyer(n)
	if _, ok := b.state[k]; !ok {
		b.state[k] = open{from: at, event: event}
	}
}

// end closes buyer n's stretch of kind k, if one is open.
func (f *Fold) end(n int, k Kind, at time.Duration) {
	b := f.buyer(n)
	if o, ok := b.state[k]; ok {
		f.spans = append(f.spans, Span{Lane: n, Kind: k, From: o.from, To: max(at, o.from), Event: o.event})
		delete(b.state, k)
	}
}

// endWait ends order k's wait (its work, with no lock) at at.
func (f *Fold) endWait(n, k int, at time.Duration) {
	b := f.buyer(n)
	if o, ok := b.waits[k]; ok {
		kind := Wait
		if f.noLock {
			kind = Work
		}
		f.spans = append(f.spans, Span{Lane: n, Kind: kind, From: o.from, To: max(at, o.from), Event: -1})
		delete(b.waits, k)
	}
}

// endInside ends order k's stretch inside at at.
func (f *Fold) endInside(n, k int, at time.Duration) {
	b := f.buyer(n)
	if o, ok := b.inside[k]; ok {
		f.spans = append(f.spans, Span{Lane: n, Kind: Inside, From: o.from, To: max(at, o.from), Event: -1})
		delete(b.inside, k)
	}
}

// endHold says, at at, that buyer n's lock on node i is gone (i -1: on no node in particular).
// left: it was what n's hold left there, and the hold had ended already. Otherwise n's hold ends,
// and what n wrote on the other nodes stays as what it left, until its own event says it went.
func (f *Fold) endHold(n, i int, at time.Duration, left bool) {
	if i >= 0 && i < len(f.nodes) && f.nodes[i].holder == n {
		f.endNode(i, at, "")
	}
	if left {
		return
	}
	f.end(n, Nested, at)
	f.end(n, Hold, at)
	for j, x := range f.nodes {
		if x.holder != n || x.left {
			continue
		}
		ev := x.event
		f.endNode(j, at, "")
		if i >= 0 {
			*f.nodes[j] = node{holder: n, from: at, event: ev, left: true}
		}
	}
}

// endNode ends the hold on node i at at; why says why, where no event of its own did. A hold
// taken over on the last node its holder had ends its buyer's hold there too.
func (f *Fold) endNode(i int, at time.Duration, why string) {
	x := f.nodes[i]
	if x.holder == 0 {
		return
	}
	f.spans = append(f.spans, Span{Lane: Node(i), Kind: Held, From: x.from, To: max(at, x.from), Holder: x.holder, Left: x.left, Why: why, Event: x.event})
	n := x.holder
	*x = node{}
	if why != "" && f.holds(n) == 0 {
		f.end(n, Nested, at)
		f.end(n, Hold, at)
	}
}
