package referee

import (
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/shopcheck"
)

// A second, independent checker, as Jepsen pairs each history with a checker of its own: the
// shop's part of a history, each order one atomic "read the stock, write it one less" operation,
// checked for linearizability by porcupine (shopcheck). It knows nothing of locks: a lock that
// failed to protect the shop leaves a history no one-at-a-time order of sales explains, which is
// exactly a lost update, which is exactly the referee's oversold. Where the two disagree, the
// report says so and why.

// shopOps is h's shop as shopcheck's operations: each order's last read before its write (or its
// last read, if it wrote nothing), and that write.
func shopOps(h *history.History) []shopcheck.Op {
	type acc struct {
		op    shopcheck.Op
		reads []history.Record
	}
	by := map[int]*acc{}
	var order []int
	get := func(rec history.Record) *acc {
		a := by[rec.Order]
		if a == nil {
			a = &acc{op: shopcheck.Op{Order: rec.Order, Buyer: rec.Buyer}}
			by[rec.Order] = a
			order = append(order, rec.Order)
		}
		return a
	}
	for _, rec := range h.Records {
		if rec.Kind != history.RecStock || rec.Order == 0 {
			continue
		}
		a := get(rec)
		switch rec.What {
		case history.StockRead, history.StockSoldOut:
			a.reads = append(a.reads, rec)
		case history.StockSell:
			a.reads = append(a.reads, history.Record{Seq: rec.Seq, Stock: rec.Stock + 1})
			a.op.WriteSeq, a.op.Wrote = rec.Seq, rec.Stock
		case history.StockWrite, history.StockWriteRefused:
			if a.op.WriteSeq == 0 { // an order writes once; a second write is its own op's business
				a.op.WriteSeq, a.op.Wrote, a.op.Refused = rec.Seq, rec.Stock, rec.What == history.StockWriteRefused
			}
		}
	}
	var ops []shopcheck.Op
	for _, id := range order {
		a := by[id]
		for i := len(a.reads) - 1; i >= 0; i-- {
			if a.op.WriteSeq == 0 || a.reads[i].Seq <= a.op.WriteSeq {
				a.op.ReadSeq, a.op.Read = a.reads[i].Seq, a.reads[i].Stock
				break
			}
		}
		ops = append(ops, a.op)
	}
	return ops
}

// secondOpinion checks h's shop with shopcheck and compares with the referee's oversold: the
// checker's verdict in a sentence, and, where the two disagree, the difference and why ("" when
// they agree).
func secondOpinion(h *history.History, oversold int, overlaps int) (linearizable bool, said, disagree string) {
	v := shopcheck.Check(h.Stock, shopOps(h))
	switch {
	case v.Linearizable && oversold == 0 && overlaps > 0:
		said = "linearizable: the orders overlapped, but no sale was lost (the shop refused the stale write)"
	case v.Linearizable && oversold == 0:
		said = "linearizable: one sale after another explains every order"
	case v.Linearizable:
		said = "linearizable"
		disagree = disagreeSays(oversold)
	case oversold > 0:
		said = "not linearizable: " + v.Why
	default:
		said = "not linearizable: " + v.Why
		disagree = "the checker finds a history no one-at-a-time order explains, yet the referee counts nothing oversold: " + v.Why
	}
	return v.Linearizable, said, disagree
}
