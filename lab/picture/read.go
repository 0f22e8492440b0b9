package picture

import (
	"cmp"
	"slices"
	"time"
)

// What the terminal and the page read of a fold.

// Spans are the lanes' stretches that reach from or later, in no order; those under way end at
// the fold's latest moment (Open).
func (f *Fold) Spans(from time.Duration) []Span {
	var out []Span
	f.EachSpan(from, func(s Span) { out = append(out, s) })
	return out
}

// EachSpan calls fn with each stretch Spans(from) returns.
func (f *Fold) EachSpan(from time.Duration, fn func(Span)) {
	for _, s := range f.spans {
		if s.To >= from {
			fn(s)
		}
	}
	add := func(lane int, k Kind, o open) {
		fn(Span{Lane: lane, Kind: k, From: o.from, To: max(f.now, o.from), Open: true, Event: o.event})
	}
	for n, b := range f.buyers {
		for _, o := range b.waits {
			k := Wait
			if f.noLock {
				k = Work
			}
			add(n, k, o)
		}
		for _, o := range b.inside {
			add(n, Inside, o)
		}
		for k, o := range b.state {
			add(n, k, o)
		}
	}
	for i, x := range f.nodes {
		if x.holder != 0 {
			fn(Span{Lane: Node(i), Kind: Held, From: x.from, To: max(f.now, x.from), Open: true, Holder: x.holder, Left: x.left, Event: x.event})
		}
	}
	if f.owner.Holder != 0 {
		s := f.owner
		s.To, s.Open = max(f.now, s.From), true
		fn(s)
	}
}

// Marks are the marks drawn from from to to, in time order.
func (f *Fold) Marks(from, to time.Duration) []Drawn {
	lo, _ := slices.BinarySearchFunc(f.marks, from, func(d Drawn, t time.Duration) int { return cmp.Compare(d.At, t) })
	hi, _ := slices.BinarySearchFunc(f.marks, to+1, func(d Drawn, t time.Duration) int { return cmp.Compare(d.At, t) })
	return f.marks[lo:hi]
}

// Forget drops the stretches that ended and the marks drawn before before: a live session keeps
// what its timeline can still show.
func (f *Fold) Forget(before time.Duration) {
	f.spans = slices.DeleteFunc(f.spans, func(s Span) bool { return s.To < before })
	k, _ := slices.BinarySearchFunc(f.marks, before, func(d Drawn, t time.Duration) int { return cmp.Compare(d.At, t) })
	f.marks = slices.Delete(f.marks, 0, k)
}

// Buyer tells what buyer n's lane is now: its state, and its orders under way, waiting and inside.
func (f *Fold) Buyer(n int) (st State, under, waiting, inside int) {
	b := f.buyers[n]
	if b == nil {
		return Idle, 0, 0, 0
	}
	var fl Flags
	for k := range b.state {
		fl |= 1 << k
	}
	if len(b.inside) > 0 {
		fl |= 1 << Inside
	}
	if len(b.waits) > 0 {
		if f.noLock {
			fl |= 1 << Work
		} else {
			fl |= 1 << Wait
		}
	}
	return StateOf(fl), len(b.under), len(b.waits), len(b.inside)
}

// Under tells whether buyer n's order k is under way (started, not returned).
func (f *Fold) Under(n, k int) bool {
	b := f.buyers[n]
	return b != nil && b.under[k]
}

// UnderOrders are buyer n's orders under way, in order.
func (f *Fold) UnderOrders(n int) []int {
	var out []int
	if b := f.buyers[n]; b != nil {
		for k := range b.under {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
