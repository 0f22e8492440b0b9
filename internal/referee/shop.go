package referee

import (
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The shop's checkers: overlap and oversold (the shop is the truth: an order's critical section
// runs from the stock read its write was computed from to that write, in the inventory's order),
// lost-sales (an order that sold nothing, wrote nothing and was not excused, while units
// remained), and starved (an order passed by StarveLimit orders that began after it).

func (r *Referee) orderBegan(rec history.Record) {
	o := &rorder{id: rec.Order, buyer: rec.Buyer, k: rec.K, rank: len(r.ranked), began: rec.At, in: -1}
	for _, w := range r.ranked {
		if w.working && w.in < 0 && !w.ended {
			if w.unpassed == nil {
				w.unpassed = map[int]bool{}
			}
			w.unpassed[o.id] = true
		}
	}
	r.orders[o.id] = o
	r.ranked = append(r.ranked, o)
	p := r.proc(rec.Buyer)
	p.current++
	p.orders++
	p.ended = -1
	r.say(Event{At: rec.At, Kind: EvStart, Buyer: rec.Buyer, Order: rec.K})
}

func (r *Referee) orderEnded(rec history.Record) {
	o := r.orders[rec.Order]
	if o == nil || o.ended {
		return
	}
	o.ended, o.endedAt, o.failed = true, rec.At, rec.Err != ""
	p := r.proc(o.buyer)
	p.current--
	if p.current <= 0 {
		p.current, p.ended = 0, rec.At
	}
	if o.inside {
		o.inside = false
		r.say(Event{At: rec.At, Kind: EvExit, Buyer: o.buyer, Order: o.k})
	}
	if o.entry == 0 {
		r.passedBy(o, rec.At)
	}
	// Units remained as far as the order could tell: what its last read saw, or, without one,
	// the shelf as last written.
	shelf := r.shelf
	if len(o.reads) > 0 {
		shelf = o.reads[len(o.reads)-1].stock
	}
	if o.confirmed == 0 && !o.wrote && rec.Excuse == "" && shelf > 0 {
		j := Rejection{Buyer: o.buyer, Order: o.id, Stock: shelf, At: rec.At}
		r.lost = append(r.lost, j)
		r.say(Event{At: rec.At, Kind: EvRejected, Buyer: o.buyer, Order: o.k, Stock: shelf})
		r.announce(rec.At, vocab.LostSales, j.String(), j.Buyer)
	}
	r.say(Event{At: rec.At, Kind: EvDone, Buyer: o.buyer, Order: o.k, Sold: o.confirmed > 0, Err: rec.Err})
}

// waiting reports whether o was waiting at the moment: begun, not in yet, not ended.
func (o *rorder) waiting() bool { return !o.ended && o.in < 0 }

// waitAgain sends o back to waiting as a Lock call of it begins, unless one was granted: what it
// did before (a read of the stock) was no entry.
func (o *rorder) waitAgain() {
	if !o.granted {
		o.in, o.entry = -1, 0
	}
}

// gotIn notes that o got in at at (a granted Lock call, or a stock operation while it held none).
func (o *rorder) gotIn(at time.Duration) {
	if o.in < 0 {
		o.in = at
	}
}

func (r *Referee) stockOp(rec history.Record) {
	o := r.orders[rec.Order]
	if o == nil {
		return // the end-of-run probe's shop sells nothing and records nothing
	}
	o.working = false
	op := stockOp{seq: rec.Seq, at: rec.At, stock: rec.Stock, token: rec.Token}
	o.gotIn(rec.At)
	if o.entry == 0 {
		o.entry = rec.Seq
		r.passedBy(o, rec.At)
	}
	if rec.Buyer > 0 {
		r.commands++ // each shop operation is one command
	}
	r.say(Event{At: rec.At, Kind: EvCommand, Buyer: rec.Buyer, Cmd: stockCommand(rec.What)})
	switch rec.What {
	case history.StockRead:
		r.read(o, op)
	case history.StockSell:
		r.read(o, stockOp{seq: rec.Seq, at: rec.At, stock: rec.Stock + 1})
		r.write(o, op, false)
	case history.StockSoldOut:
		r.read(o, op)
	case history.StockWrite:
		r.write(o, op, false)
	case history.StockWriteRefused:
		r.say(Event{At: rec.At, Kind: EvFenced, Buyer: o.buyer, Order: o.k, Token: rec.Token, Write: true})
		r.write(o, op, true)
	case history.StockReadRefused:
		r.say(Event{At: rec.At, Kind: EvFenced, Buyer: o.buyer, Order: o.k, Token: rec.Token})
	}
}

func (r *Referee) read(o *rorder, op stockOp) {
	o.reads = append(o.reads, op)
	o.inside = true
	r.say(Event{At: op.at, Kind: EvEnter, Buyer: o.buyer, Order: o.k, Stock: op.stock, Token: op.token, Granted: o.granted, NoLock: r.h.NoLock})
}

// passedBy counts, once o's wait is over (its first stock operation since it got in, or its end
// without one), the orders that began after it and got in first, in the inventory's order: more
// than StarveLimit, and it starved. A process's own orders do not pass it.
func (r *Referee) passedBy(o *rorder, at time.Duration) {
	n := r.passes(o)
	if n < vocab.StarveLimit || o.starved {
		return
	}
	o.starved = true
	s := Starve{Buyer: o.buyer, Passed: n, At: at}
	r.starved = append(r.starved, s)
	r.announce(at, vocab.Starved, s.String(), s.Buyer)
}

// passes counts the orders that asked after o (askedAfter), while o was not at its own work, and
// got in first, in the inventory's order. Hazard: an order that does its work before anything
// else (a lock-free sale, step 17) is busy, not waiting; counting those that began meanwhile
// called it starved.
func (r *Referee) passes(o *rorder) int {
	n := 0
	for _, x := range r.ranked {
		if x.buyer != o.buyer && askedAfter(x, o) && !o.unpassed[x.id] && x.entry > 0 && (o.entry == 0 || x.entry < o.entry) {
			n++
		}
	}
	return n
}

// askedAfter reports whether order x asked after order o: it began later, or at the same instant
// with a higher buyer number. The record order of two begins at one instant is the Go
// scheduler's pick, so it decides nothing; the buyers' numbers are the order a drive session
// (and the challenges) present them in, the same on every play.
func askedAfter(x, o *rorder) bool {
	return x.began > o.began || x.began == o.began && x.buyer > o.buyer
}

// write ends o's critical section at op: from its last read before op (none: a write computed
// from nothing the shop said, which sells nothing it knows of).
func (r *Referee) write(o *rorder, op stockOp, refused bool) {
	o.wrote, o.wroteAt = true, op.at
	var from *stockOp
	for i := len(o.reads) - 1; i >= 0; i-- {
		if o.reads[i].seq <= op.seq {
			from = &o.reads[i]
			break
		}
	}
	if !refused {
		o.confirmed++
		r.confirmed++
		if op.seq > r.shelfSeq {
			r.shelf, r.shelfSeq = op.stock, op.seq
		}
		r.say(Event{At: op.at, Kind: EvWrite, Buyer: o.buyer, Order: o.k, Stock: op.stock, Token: op.token})
		if over := r.confirmed - (r.h.Stock - r.shelf); over > 0 {
			r.announce(op.at, vocab.Oversold, oversoldSoFar(op.at, r.confirmed, r.h.Stock-r.shelf), o.buyer)
		}
	}
	if o.inside {
		o.inside = false
		r.say(Event{At: op.at, Kind: EvExit, Buyer: o.buyer, Order: o.k})
	}
	if from == nil {
		return
	}
	s := &span{o: o, read: *from, write: op, refused: refused}
	for _, x := range r.spans {
		r.decide(x, s)
	}
	r.spans = append(r.spans, s)
}

// decide records x and y as overlapping if each began before the other ended, in the
// inventory's order.
func (r *Referee) decide(x, y *span) {
	if !(x.read.seq < y.write.seq && y.read.seq < x.write.seq) {
		return
	}
	if y.read.seq < x.read.seq {
		x, y = y, x
	}
	key := [2]int{x.o.id, y.o.id}
	if r.pairs[key] {
		return
	}
	r.pairs[key] = true
	to := min(x.write.at, y.write.at)
	ov := Overlap{A: x.o.buyer, B: y.o.buyer, From: y.read.at, To: max(to, y.read.at)}
	r.overlaps = append(r.overlaps, ov)
	at := max(x.write.at, y.write.at)
	r.say(Event{At: at, Kind: EvOverlap, Buyer: ov.B, Other: ov.A, From: ov.From, To: ov.To, Sentence: ov.String()})
	r.announce(at, vocab.Overlap, ov.String(), ov.B, ov.A)
}
