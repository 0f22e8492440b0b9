package explore

import (
	"slices"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Safety are the kinds that say a lock let two in, or undid another's hold: what a lock exists to
// prevent. A map says them first, then the others (the shop stopped selling, or worked badly) in
// the referee's order.
var Safety = []vocab.Kind{vocab.Overlap, vocab.Oversold, vocab.ForeignRelease, ForeignRenewal}

// ForeignRenewal is issue 34's kind, a renewal of a lock another process holds, which the referee
// judges once branch referee4 lands (vocab.ForeignRenewal then): named here so that a map puts it
// with the safety kinds from the first run that shows it.
const ForeignRenewal vocab.Kind = "foreign-renewal"

// Safe reports whether k is one of Safety.
func Safe(k vocab.Kind) bool { return slices.Contains(Safety, k) }

// rank is k's place in a map: the safety kinds first, then the referee's order.
func rank(k vocab.Kind) int {
	if i := slices.Index(Safety, k); i >= 0 {
		return i
	}
	if i := slices.Index(vocab.Kinds, k); i >= 0 {
		return len(Safety) + i
	}
	return len(Safety) + len(vocab.Kinds)
}

// Ordered is ks in a map's order: the safety kinds first.
func Ordered(ks []vocab.Kind) []vocab.Kind {
	out := slices.Clone(ks)
	slices.SortStableFunc(out, func(a, b vocab.Kind) int { return rank(a) - rank(b) })
	return out
}

// Way is how a program broke a lock: the first kind of its verdict in a map's order (overlap
// before oversold before … idle), "" when it broke nothing or has no verdict.
func Way(rep *referee.Report) vocab.Kind {
	if rep == nil || !rep.Complete() || len(rep.Violations) == 0 {
		return ""
	}
	return Ordered(rep.Violations)[0]
}

// Shows reports whether rep is a verdict (complete) in which k was violated.
func Shows(rep *referee.Report, k vocab.Kind) bool {
	return rep != nil && rep.Complete() && slices.Contains(rep.Violations, k)
}

// Shrink makes p smaller while breaks says a smaller one still breaks the lock the same way, as
// property-based testing shrinks a counterexample: it tries, in turn, without a buyer, without an
// order, without a fault, without a buyer's skew or missing node, then shorter waits and work and
// a smaller shelf, and keeps the first candidate that still breaks, until no candidate does or
// tries runs out. It returns the smallest program found and how many candidates it played.
// Hazard: each try is one run; breaks must be a function of the program (a run in virtual time).
func Shrink(p Program, tries int, breaks func(Program) bool) (Program, int) {
	played := 0
	p = p.Clone()
	p.Seed = 0 // no longer the seed's program
	for {
		better := false
		for _, c := range candidates(p) {
			if played >= tries {
				return p, played
			}
			played++
			if breaks(c) {
				p, better = c, true
				break
			}
		}
		if !better {
			return p, played
		}
	}
}

// candidates are the programs one step smaller than p, the biggest steps first.
func candidates(p Program) []Program {
	var out []Program
	add := func(f func(q *Program) bool) {
		q := p.Clone()
		if f(&q) {
			out = append(out, q)
		}
	}
	for i := range p.Buyers {
		if len(p.Buyers) > 1 {
			add(func(q *Program) bool { q.Buyers = slices.Delete(q.Buyers, i, i+1); return true })
		}
	}
	for i, b := range p.Buyers {
		for k := range b.Orders {
			if len(b.Orders) > 1 {
				add(func(q *Program) bool {
					q.Buyers[i].Orders = slices.Delete(q.Buyers[i].Orders, k, k+1)
					return true
				})
			}
		}
	}
	for i, b := range p.Buyers {
		for k, o := range b.Orders {
			if o.Fault != "" {
				add(func(q *Program) bool { q.Buyers[i].Orders[k].Fault, q.Buyers[i].Orders[k].Gap = "", 0; return true })
			}
		}
	}
	for i, b := range p.Buyers {
		if b.Skew > 0 {
			add(func(q *Program) bool { q.Buyers[i].Skew = 0; return true })
		}
		if b.Missing {
			add(func(q *Program) bool { q.Buyers[i].Missing = false; return true })
		}
	}
	for i, b := range p.Buyers {
		for k, o := range b.Orders {
			for _, v := range smaller(o.After) {
				add(func(q *Program) bool { q.Buyers[i].Orders[k].After = v; return true })
			}
			for _, v := range smaller(o.Work) {
				add(func(q *Program) bool { q.Buyers[i].Orders[k].Work = v; return true })
			}
			if o.Gap > 0 {
				add(func(q *Program) bool { q.Buyers[i].Orders[k].Gap = 0; return true })
			}
		}
	}
	for _, v := range smaller(p.Stock - 1) {
		add(func(q *Program) bool { q.Stock = v + 1; return true })
	}
	return out
}

// smaller is the values to try in place of n ≥ 0: none, half, one less.
func smaller(n int) []int {
	var out []int
	for _, v := range []int{0, n / 2, n - 1} {
		if v >= 0 && v < n && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
