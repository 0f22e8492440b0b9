package shopcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sale is an order that read at r and wrote read−1 at w.
func sale(order, buyer int, r int64, read int, w int64) Op {
	return Op{Order: order, Buyer: buyer, ReadSeq: r, Read: read, WriteSeq: w, Wrote: read - 1}
}

// refused is an order that read at r and whose write at w the inventory refused.
func refused(order, buyer int, r int64, read int, w int64) Op {
	return Op{Order: order, Buyer: buyer, ReadSeq: r, Read: read, WriteSeq: w, Refused: true}
}

// look is an order that read at r and never wrote.
func look(order, buyer int, r int64, read int) Op {
	return Op{Order: order, Buyer: buyer, ReadSeq: r, Read: read}
}

// atomic is step 17's sale at seq s: it read and wrote under one sequence number.
func atomic(order, buyer int, s int64, read int) Op {
	return Op{Order: order, Buyer: buyer, ReadSeq: s, Read: read, WriteSeq: s, Wrote: read - 1}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial int
		ops     []Op
		want    bool
		why     string // for a non-linearizable history, what the Why must contain
	}{
		{
			name:    "empty history",
			initial: 3,
			want:    true,
		},
		{
			name:    "orders that never read are not in the history",
			initial: 3,
			ops:     []Op{{Order: 1, Buyer: 1}, {Order: 2, Buyer: 2, Read: 7}},
			want:    true,
		},
		{
			name:    "a clean sequence of 3 sales",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 2), sale(2, 2, 3, 2, 4), sale(3, 1, 5, 1, 6)},
			want:    true,
		},
		{
			name:    "the ops may come in any order",
			initial: 3,
			ops:     []Op{sale(3, 1, 5, 1, 6), sale(1, 1, 1, 3, 2), sale(2, 2, 3, 2, 4)},
			want:    true,
		},
		{
			// The lock let both in: each read 3 before the other wrote, and both writes landed.
			name:    "two orders read the same stock and both wrote: a lost update",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 3), sale(2, 2, 2, 3, 4)},
			want:    false,
			why:     "order 1 of buyer 1 and order 2 of buyer 2 both read 3 and both wrote 2 (reads at 1 and 2, writes at 3 and 4): no order of one sale after the other explains it",
		},
		{
			// Step 16 under a stop-the-world pause: the lock failed, but the inventory refused the
			// second write's stale fencing token, so the shop is whole.
			name:    "two orders read the same stock and the second write was refused",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 3), refused(2, 2, 2, 3, 4)},
			want:    true,
		},
		{
			name:    "the paused order's stale write was refused after the other sold",
			initial: 3,
			ops:     []Op{refused(1, 1, 1, 3, 4), sale(2, 2, 2, 3, 3)},
			want:    true,
		},
		{
			// Order 1 read 3, unlocked (or its lock ran out), order 2 came in, read 3 and sold;
			// then order 1 wrote the 2 it had computed from its old read.
			name:    "an order wrote a stale value after another read and wrote",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 4), sale(2, 2, 2, 3, 3)},
			want:    false,
			why:     "order 1 of buyer 1 and order 2 of buyer 2 both read 3 and both wrote 2",
		},
		{
			name:    "two orders of one buyer oversold",
			initial: 5,
			ops:     []Op{sale(4, 1, 1, 5, 3), sale(5, 1, 2, 5, 4)},
			want:    false,
			why:     "orders 4 and 5 of buyer 1 both read 5 and both wrote 4",
		},
		{
			name:    "an order that read and never wrote, in between others",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 2), look(2, 2, 3, 2), sale(3, 3, 4, 2, 5)},
			want:    true,
		},
		{
			name:    "an order that read inside another's span, before its write",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 3), look(2, 2, 2, 3)},
			want:    true,
		},
		{
			// Its read must equal the stock at some point inside its span: right after its read.
			name:    "an order that read a stock already sold",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 2), look(2, 2, 3, 3), sale(3, 3, 4, 2, 5)},
			want:    false,
			why:     "order 2 of buyer 2 read 3 at sequence number 3, after order 1 of buyer 1 had written 2 at 2: no order of one after the other explains it",
		},
		{
			name:    "atomic sales down to sold out",
			initial: 2,
			ops:     []Op{atomic(1, 1, 1, 2), atomic(2, 2, 2, 1), look(3, 3, 3, 0), look(4, 1, 4, 0)},
			want:    true,
		},
		{
			name:    "an atomic sale that found nothing while a unit was left",
			initial: 2,
			ops:     []Op{atomic(1, 1, 1, 2), look(2, 2, 2, 0)},
			want:    false,
			why:     "order 2 of buyer 2 read 0 at sequence number 2, after order 1 of buyer 1 had written 1 at 1",
		},
		{
			name:    "two atomic sales of one unit",
			initial: 1,
			ops:     []Op{atomic(1, 1, 1, 1), atomic(2, 2, 2, 1)},
			want:    false,
			why:     "order 1 of buyer 1 and order 2 of buyer 2 both read 1 and both wrote 0",
		},
		{
			name:    "the first order read what the shelf never held",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 5, 2), sale(2, 2, 3, 4, 4)},
			want:    false,
			why:     "order 1 of buyer 1 read 5 at sequence number 1, but the shelf started at 3",
		},
		{
			// The first sale is fine; the Why must name the two that oversold, not the shelf.
			name:    "a lost update after a clean sale",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 2), sale(2, 2, 3, 2, 5), sale(3, 3, 4, 2, 6), sale(4, 1, 7, 1, 8)},
			want:    false,
			why:     "order 2 of buyer 2 and order 3 of buyer 3 both read 2 and both wrote 1",
		},
		{
			// A read and a write that cannot be ordered though neither ends before the other begins.
			name:    "an order read what nobody wrote while another sold",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 3), look(2, 2, 2, 7)},
			want:    false,
			why:     "order 1 of buyer 1 (read 3 at 1, wrote 2 at 3) and order 2 of buyer 2 (read 7 at 2) cannot be put in any one-at-a-time order consistent with the inventory's order",
		},
		{
			name:    "malformed: a write before its read",
			initial: 3,
			ops:     []Op{sale(1, 1, 5, 3, 4)},
			want:    false,
			why:     "the history is malformed: order 1 of buyer 1 wrote at sequence number 4, before the read at 5",
		},
		{
			name:    "malformed: a sequence number used twice",
			initial: 3,
			ops:     []Op{sale(1, 1, 1, 3, 2), sale(2, 2, 2, 2, 3)},
			want:    false,
			why:     "the history is malformed: order 1 of buyer 1 and order 2 of buyer 2 both claim sequence number 2",
		},
		{
			name:    "malformed: a negative sequence number",
			initial: 3,
			ops:     []Op{sale(1, 1, -1, 3, 2)},
			want:    false,
			why:     "the history is malformed: order 1 of buyer 1 has a read sequence number -1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.ops)
			v := Check(tc.initial, tc.ops)
			if !slices.Equal(in, tc.ops) {
				t.Errorf("Check changed its input: %v, was %v", tc.ops, in)
			}
			if v.Linearizable != tc.want {
				t.Fatalf("Linearizable = %v, want %v (Why: %q)", v.Linearizable, tc.want, v.Why)
			}
			if tc.want && v.Why != "" {
				t.Errorf("a linearizable history has Why %q, want \"\"", v.Why)
			}
			if !tc.want && !strings.Contains(v.Why, tc.why) {
				t.Errorf("Why = %q\nwant it to contain %q", v.Why, tc.why)
			}
		})
	}
}

// sequential is n sales one at a time from a shelf of n, each read right after the last write;
// lost, if > 0, makes the sale of order lost read what the one before it read (a lost update).
func sequential(n, lost int) []Op {
	ops := make([]Op, n)
	stock := n
	for i := range ops {
		read := stock
		if i+1 == lost {
			read++
		}
		ops[i] = sale(i+1, i%5+1, int64(2*i+1), read, int64(2*i+2))
		stock = read - 1
	}
	return ops
}

func TestCheckLongHistories(t *testing.T) {
	if v := Check(200, sequential(200, 0)); !v.Linearizable || v.Why != "" {
		t.Fatalf("200 sequential sales: got %+v, want linearizable", v)
	}
	v := Check(200, sequential(200, 150))
	if v.Linearizable {
		t.Fatal("200 sequential sales with a lost update at order 150: got linearizable")
	}
	if want := "order 149 of buyer 4 and order 150 of buyer 5 both read 52 and both wrote 51"; !strings.Contains(v.Why, want) {
		t.Errorf("Why = %q\nwant it to contain %q", v.Why, want)
	}
}

// TestCheckAgainstBruteForce compares Check with a checker that tries every one-at-a-time order,
// on small histories from a simulated inventory: orders interleave their reads and writes at
// random, some writes are refused, some sales are atomic, and some reads are corrupted.
func TestCheckAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 17))
	counts := map[bool]int{}
	for round := range 3000 {
		initial, ops := randomHistory(rng)
		want := bruteForce(initial, ops)
		v := Check(initial, ops)
		counts[want]++
		if v.Linearizable != want {
			t.Fatalf("round %d: Check says %v, brute force %v, from %d: %+v (Why %q)", round, v.Linearizable, want, initial, ops, v.Why)
		}
		if v.Linearizable != (v.Why == "") {
			t.Fatalf("round %d: Linearizable %v with Why %q", round, v.Linearizable, v.Why)
		}
	}
	if counts[true] < 300 || counts[false] < 300 {
		t.Fatalf("the generator is lopsided: %d linearizable, %d not", counts[true], counts[false])
	}
}

// randomHistory runs 1 to 6 orders against a simulated inventory and returns the shelf's initial
// stock and the orders' ops.
func randomHistory(rng *rand.Rand) (int, []Op) {
	initial := rng.IntN(5)
	stock := initial
	var seq int64
	n := 1 + rng.IntN(6)
	ops := make([]Op, n)
	phase := make([]int, n) // 0: to read, 1: to write, 2: done
	for i := range ops {
		ops[i] = Op{Order: i + 1, Buyer: 1 + rng.IntN(3)}
	}
	for {
		var live []int
		for i, p := range phase {
			if p < 2 {
				live = append(live, i)
			}
		}
		if len(live) == 0 {
			break
		}
		i := live[rng.IntN(len(live))]
		op := &ops[i]
		seq++
		switch {
		case phase[i] == 0 && rng.IntN(8) == 0: // the atomic sale
			op.ReadSeq, op.Read = seq, stock
			if stock > 0 {
				op.WriteSeq, op.Wrote = seq, stock-1
				stock--
			}
			phase[i] = 2
		case phase[i] == 0:
			op.ReadSeq, op.Read = seq, stock
			if rng.IntN(10) == 0 {
				op.Read = rng.IntN(5) // a corrupted read
			}
			phase[i] = 1
			if op.Read == 0 || rng.IntN(10) == 0 { // sold out, or gave up
				phase[i] = 2
			}
		default:
			op.WriteSeq, op.Wrote = seq, op.Read-1
			if rng.IntN(3) == 0 {
				op.Refused = true
			} else {
				stock = op.Wrote
			}
			phase[i] = 2
		}
	}
	return initial, ops
}

// bruteForce tries every order of the ops that read, keeping the inventory's order: an op that
// ended (wrote, or read without writing) before another read comes first.
func bruteForce(initial int, ops []Op) bool {
	var h []Op
	for _, op := range ops {
		if op.ReadSeq != 0 {
			h = append(h, op)
		}
	}
	end := func(op Op) float64 {
		if op.WriteSeq == 0 {
			return float64(op.ReadSeq) + 0.5
		}
		return float64(op.WriteSeq)
	}
	used := make([]bool, len(h))
	var try func(state, placed int) bool
	try = func(state, placed int) bool {
		if placed == len(h) {
			return true
		}
	next:
		for i, op := range h {
			if used[i] || op.Read != state {
				continue
			}
			for j, other := range h { // an op still to place that ended before op began must go first
				if !used[j] && j != i && end(other) < float64(op.ReadSeq) {
					continue next
				}
			}
			after := state
			if op.WriteSeq != 0 && !op.Refused {
				after = op.Wrote
			}
			used[i] = true
			ok := try(after, placed+1)
			used[i] = false
			if ok {
				return true
			}
		}
		return false
	}
	return try(initial, 0)
}

// overlapping is n orders that all read the shelf of n before any wrote; the first write lands
// and the rest are refused when fenced, or all land (n−1 lost updates) when not.
func overlapping(n int, fenced bool) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = sale(i+1, i+1, int64(i+1), n, int64(n+i+1))
		if fenced && i > 0 {
			ops[i] = refused(i+1, i+1, int64(i+1), n, int64(n+i+1))
		}
	}
	return ops
}

func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct {
		name    string
		initial int
		ops     []Op
		want    bool
	}{
		{"50 sequential", 50, sequential(50, 0), true},
		{"50 sequential, a lost update", 50, sequential(50, 25), false},
		{"8 overlapping, fenced", 8, overlapping(8, true), true},
		{"8 overlapping, lost updates", 8, overlapping(8, false), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if v := Check(bc.initial, bc.ops); v.Linearizable != bc.want {
					b.Fatalf("got %+v, want linearizable %v", v, bc.want)
				}
			}
		})
	}
}

func ExampleCheck() {
	// Two buyers' orders overlapped (the lock failed) and both writes landed.
	fmt.Println(Check(3, []Op{
		{Order: 1, Buyer: 1, ReadSeq: 1, Read: 3, WriteSeq: 3, Wrote: 2},
		{Order: 2, Buyer: 2, ReadSeq: 2, Read: 3, WriteSeq: 4, Wrote: 2},
	}).Why)
	// The same, with the inventory refusing the second write's stale fencing token.
	fmt.Println(Check(3, []Op{
		{Order: 1, Buyer: 1, ReadSeq: 1, Read: 3, WriteSeq: 3, Wrote: 2},
		{Order: 2, Buyer: 2, ReadSeq: 2, Read: 3, WriteSeq: 4, Refused: true},
	}).Linearizable)
	// Output:
	// order 1 of buyer 1 and order 2 of buyer 2 both read 3 and both wrote 2 (reads at 1 and 2, writes at 3 and 4): no order of one sale after the other explains it
	// true
}
