package referee

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The referee's tests are written-down histories: no Redis, no arena, no clock. Each builds the
// records a run would have left and judges them.

const msec = time.Millisecond

// hb writes a history down, record by record, each a millisecond after the last unless told.
type hb struct {
	h     history.History
	at    time.Duration
	call  int
	seq   int64 // the inventory's
	nseq  int64 // the lock node's
	order map[int]int
}

// newHB starts a history of scenario sc (judged for judged; "" for a live session, judged for every
// kind) with stock units on the shelf.
func newHB(sc vocab.Scenario, stock int, judged ...vocab.Kind) *hb {
	return &hb{h: history.History{Step: "written", Scenario: sc, Judged: judged, Backend: "none", Timing: history.DefaultTiming(),
		Nodes: []string{"lock"}, LockKey: lockName, Stock: stock}, order: map[int]int{}}
}

func (b *hb) add(r history.Record) *hb {
	b.at += msec
	if r.At == 0 {
		r.At = b.at
	}
	b.h.Records = append(b.h.Records, r)
	return b
}

// begin starts order o of buyer.
func (b *hb) begin(buyer, o int) *hb {
	b.order[o] = buyer
	return b.add(history.Record{Kind: history.RecOrder, What: history.OrderBegin, Buyer: buyer, Order: o, K: o})
}

// work is order o beginning its business work.
func (b *hb) work(o int) *hb {
	return b.add(history.Record{Kind: history.RecOrder, What: history.OrderWork, Buyer: b.order[o], Order: o})
}

// end ends order o; excuse as an Excuse.
func (b *hb) end(o int, excuse string) *hb {
	return b.add(history.Record{Kind: history.RecOrder, What: history.OrderEnd, Buyer: b.order[o], Order: o, Excuse: excuse})
}

// cmd records a command of buyer (in call, 0: none) that changed keys.
func (b *hb) cmd(buyer, call int, name string, args []string, keys ...history.KeyChange) *hb {
	b.nseq++
	return b.add(history.Record{Kind: history.RecCmd, Buyer: buyer, Call: call, Cmds: []history.Cmd{{Name: name, Args: args}}, Keys: keys, Seq: b.nseq})
}

// lock is a whole Lock call of order o: its commands (each a func that records one), and its
// answer.
func (b *hb) lock(o int, ok bool, cmds ...func(call int)) *hb {
	b.call++
	c, buyer := b.call, b.order[o]
	b.add(history.Record{Kind: history.RecCall, What: history.CallLock, Buyer: buyer, Order: o, Call: c})
	for _, f := range cmds {
		f(c)
	}
	return b.add(history.Record{Kind: history.RecCall, What: history.CallLock, End: true, OK: ok, Buyer: buyer, Order: o, Call: c})
}

// unlock is a whole Unlock call of order o.
func (b *hb) unlock(o int, cmds ...func(call int)) *hb {
	b.call++
	c, buyer := b.call, b.order[o]
	b.add(history.Record{Kind: history.RecCall, What: history.CallUnlock, Buyer: buyer, Order: o, Call: c})
	for _, f := range cmds {
		f(c)
	}
	return b.add(history.Record{Kind: history.RecCall, What: history.CallUnlock, End: true, OK: true, Buyer: buyer, Order: o, Call: c})
}

// set is a command of buyer writing key to v with ttl (-1: none) — created when it was absent.
func (b *hb) set(buyer int, key, before, v string, ttl time.Duration) func(int) {
	return func(call int) {
		b.cmd(buyer, call, "set", []string{key, v}, history.KeyChange{Key: key, Before: before, After: v, TTL: ttl})
	}
}

// del is a command of buyer deleting key, which held before.
func (b *hb) del(buyer int, key, before string) func(int) {
	return func(call int) { b.cmd(buyer, call, "del", []string{key}, history.KeyChange{Key: key, Before: before}) }
}

// get is a command of buyer reading key, changing nothing.
func (b *hb) get(buyer int, key string) func(int) {
	return func(call int) { b.cmd(buyer, call, "get", []string{key}) }
}

// read and write are order o's stock commands; seq is the inventory's next number unless given.
func (b *hb) read(o, stock int) *hb {
	b.seq++
	return b.add(history.Record{Kind: history.RecStock, What: history.StockRead, Buyer: b.order[o], Order: o, Seq: b.seq, Stock: stock})
}

func (b *hb) write(o, stock int) *hb {
	b.seq++
	return b.add(history.Record{Kind: history.RecStock, What: history.StockWrite, Buyer: b.order[o], Order: o, Seq: b.seq, Stock: stock})
}

func (b *hb) judge() *Report { return Judge(&b.h) }

func kinds(ks ...vocab.Kind) []vocab.Kind {
	if ks == nil {
		return []vocab.Kind{}
	}
	return ks
}

func TestJudgeWrittenHistories(t *testing.T) {
	const k = lockName
	for _, tc := range []struct {
		name  string
		write func(b *hb)
		want  []vocab.Kind // found (judged or not, with every kind judged)
		check func(t *testing.T, r *Report)
	}{
		{"two orders read before either writes: overlap, oversold", func(b *hb) {
			b.begin(1, 1).begin(2, 2).read(1, 3).read(2, 3).write(1, 2).write(2, 2).end(1, "").end(2, "")
		}, kinds(vocab.Overlap, vocab.Oversold), func(t *testing.T, r *Report) {
			if r.Oversold != 1 || r.Confirmed != 2 || len(r.Overlaps) != 1 || r.Overlaps[0].A != 1 || r.Overlaps[0].B != 2 {
				t.Errorf("%+v", r)
			}
		}},
		{"one after the other: nothing", func(b *hb) {
			b.begin(1, 1).read(1, 3).write(1, 2).end(1, "").begin(2, 2).read(2, 2).write(2, 1).end(2, "")
		}, kinds(), nil},
		{"the inventory's order, not the records': a reply late to the referee still overlaps", func(b *hb) {
			b.begin(1, 1).begin(2, 2)
			b.add(history.Record{Kind: history.RecStock, What: history.StockRead, Buyer: 2, Order: 2, Seq: 2, Stock: 3})
			b.add(history.Record{Kind: history.RecStock, What: history.StockWrite, Buyer: 2, Order: 2, Seq: 3, Stock: 2})
			b.add(history.Record{Kind: history.RecStock, What: history.StockRead, Buyer: 1, Order: 1, Seq: 1, Stock: 3}) // first at the inventory
			b.add(history.Record{Kind: history.RecStock, What: history.StockWrite, Buyer: 1, Order: 1, Seq: 4, Stock: 2})
			b.end(1, "").end(2, "")
		}, kinds(vocab.Overlap, vocab.Oversold), nil},
		{"a peek before the lock is no critical section: its span starts at the read the write was computed from", func(b *hb) {
			b.begin(1, 1).begin(2, 2)
			b.read(1, 3) // buyer 1 peeks
			b.read(2, 3).write(2, 2)
			b.read(1, 2).write(1, 1) // then reads again, and writes from that
			b.end(1, "").end(2, "")
		}, kinds(), nil},
		{"unlock before the write: inside until the write", func(b *hb) {
			b.begin(1, 1).begin(2, 2)
			b.lock(1, true, b.set(1, k, "", "a", -1)).read(1, 3)
			b.unlock(1, b.del(1, k, "a"))
			b.lock(2, true, b.set(2, k, "", "b", -1)).read(2, 3)
			b.write(1, 2).write(2, 2).unlock(2, b.del(2, k, "b")).end(1, "").end(2, "")
		}, kinds(vocab.Overlap, vocab.Oversold), nil},
		{"a fenced write refused: overlap without oversold", func(b *hb) {
			b.begin(1, 1).begin(2, 2).read(1, 3).read(2, 3).write(2, 2)
			b.seq++
			b.add(history.Record{Kind: history.RecStock, What: history.StockWriteRefused, Buyer: 1, Order: 1, Seq: b.seq, Stock: 2, Token: 1})
			b.end(1, "").end(2, "")
		}, kinds(vocab.Overlap), nil},
		{"another process deletes the lock: foreign release", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, k, "", "a", -1))
			b.cmd(2, 0, "del", []string{k}, history.KeyChange{Key: k, Before: "a"})
		}, kinds(vocab.ForeignRelease), func(t *testing.T, r *Report) {
			if len(r.ForeignReleases) != 1 || r.ForeignReleases[0].By != 2 || r.ForeignReleases[0].Owner != 1 {
				t.Errorf("%+v", r.ForeignReleases)
			}
		}},
		{"a lock that ran out is nobody's release; the next holder's delete is its own", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, k, "", "a", 200*msec))
			b.add(history.Record{Kind: history.RecLapse, Keys: []history.KeyChange{{Key: k, Before: "a"}}, Due: 201 * msec})
			b.lock(2, true, b.set(2, k, "", "b", 200*msec)).unlock(2, b.del(2, k, "b"))
		}, kinds(), nil},
		{"overwritten by another is no release; the first holder's DEL of the new value is foreign", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, k, "", "a", -1))
			b.lock(2, true, b.set(2, k, "a", "b", -1)) // a takeover (GETSET, SET without NX)
			b.unlock(1, b.del(1, k, "b"))
		}, kinds(vocab.ForeignRelease), func(t *testing.T, r *Report) {
			if len(r.ForeignReleases) != 1 || r.ForeignReleases[0].By != 1 || r.ForeignReleases[0].Owner != 2 {
				t.Errorf("%+v", r.ForeignReleases)
			}
		}},
		{"PEXPIRE key 1 is a release: by another process, a foreign one", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, k, "", "a", -1))
			b.cmd(2, 0, "pexpire", []string{k, "1"}, history.KeyChange{Key: k, Before: "a", After: "a", TTL: msec})
		}, kinds(vocab.ForeignRelease), nil},
		{"another process's blind SET of \"free\" outside its Lock writes over a held lock: a foreign release", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(2, true, b.set(2, k, "", "b", -1))
			b.unlock(1, b.set(1, k, "b", "free", -1)) // its own lease ran out long ago; it never checks
		}, kinds(vocab.ForeignRelease), func(t *testing.T, r *Report) {
			if len(r.ForeignReleases) != 1 || r.ForeignReleases[0].By != 1 || r.ForeignReleases[0].Owner != 2 ||
				r.ForeignReleases[0].String() != "buyer 1 wrote over the lock that buyer 2 held" {
				t.Errorf("%+v", r.ForeignReleases)
			}
		}},
		{"a waiter that takes itself out of the set its holder's release left it alone in deletes nobody's lock", func(b *hb) {
			b.begin(1, 1).lock(1, true, b.set(1, k, "", "A", -1)).read(1, 3).write(1, 2)
			b.begin(2, 2).lock(2, false, b.set(2, k, "A", "AB", -1), b.set(2, k, "AB", "A", -1)) // in, not alone: out
			b.lock(2, false, b.set(2, k, "A", "AB", -1))                                         // in again…
			b.unlock(1, b.set(1, k, "AB", "B", -1)).end(1, "")                                   // the holder takes itself out
			b.lock(2, false, b.del(2, k, "B")).end(2, "")                                        // …and out, as the set was two
		}, kinds(vocab.LostSales), nil},
		{"SET … PX 1 by the holder is its own release", func(b *hb) {
			b.begin(1, 1).lock(1, true, b.set(1, k, "", "a", -1)).read(1, 3).write(1, 2)
			b.unlock(1, b.set(1, k, "a", "a-done", msec)).end(1, "")
			b.begin(2, 2).lock(2, true, b.set(2, k, "", "b", -1)).read(2, 2).write(2, 1).unlock(2, b.del(2, k, "b")).end(2, "")
		}, kinds(), nil},
		{"a hand-over: the holder writes the next owner's token; the waiter, which wrote none, owns it", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, k, "", "a", -1))
			b.call++
			c := b.call
			b.add(history.Record{Kind: history.RecCall, What: history.CallLock, Buyer: 2, Order: 2, Call: c})
			b.cmd(2, c, "rpush", []string{k + ":queue", "b"}, history.KeyChange{Key: k + ":queue", After: "list:b", TTL: -1})
			b.get(2, k)(c)
			b.unlock(1, func(u int) {
				b.cmd(1, u, "evalsha", []string{"x", "2", k, k + ":queue"},
					history.KeyChange{Key: k, Before: "a", After: "b", TTL: -1}, history.KeyChange{Key: k + ":queue", Before: "list:b"})
			})
			b.get(2, k)(c)
			b.add(history.Record{Kind: history.RecCall, What: history.CallLock, End: true, OK: true, Buyer: 2, Order: 2, Call: c})
			b.unlock(2, b.del(2, k, "b"))
		}, kinds(), nil},
		{"a waiter that empties the line while the lock is held is no release of it", func(b *hb) {
			b.begin(1, 1).begin(2, 2).begin(3, 3)
			b.lock(1, true, func(c int) {
				b.cmd(1, c, "evalsha", []string{"x", "2", k, "line"}, history.KeyChange{Key: k, After: "h:a", TTL: -1},
					history.KeyChange{Key: "line", Before: "list:a;c", After: "list:c", TTL: -1})
			})
			b.cmd(3, 0, "lrem", []string{"line", "c"}, history.KeyChange{Key: "line", Before: "list:c"}) // a dead waiter dropped
			b.unlock(1, b.del(1, k, "h:a"))
		}, kinds(), nil},
		{"a lock on two keys: deleting either is a release", func(b *hb) {
			b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, "k1", "", "a", -1), b.set(1, "k2", "", "a", -1))
			b.cmd(2, 0, "del", []string{"k2"}, history.KeyChange{Key: "k2", Before: "a"})
		}, kinds(vocab.ForeignRelease), nil},
		{"an order turned away while units remain is a lost sale, whatever it answered; excused ones are not", func(b *hb) {
			b.begin(1, 1).end(1, "")
			b.begin(2, 2).end(2, history.ExcuseFault)
			b.begin(3, 3).end(3, history.ExcuseDead)
			b.begin(4, 4).end(4, history.ExcuseCut)
			b.begin(5, 5).read(5, 3).end(5, "") // a peek, then a refusal: no write, a lost sale
		}, kinds(vocab.LostSales), func(t *testing.T, r *Report) {
			if len(r.LostSales) != 2 || r.LostSales[0].Buyer != 1 || r.LostSales[1].Buyer != 5 {
				t.Errorf("%+v", r.LostSales)
			}
		}},
		{"a waiter passed by three orders that began after it starves, wherever it waited", func(b *hb) {
			b.begin(1, 1).begin(2, 2) // buyer 2 waits
			b.end(1, history.ExcuseCut)
			for o, n := 3, 3; o <= 5; o, n = o+1, n-1 {
				b.begin(1, o).read(o, n).write(o, n-1).end(o, "")
			}
			b.read(2, 0).end(2, "")
		}, kinds(vocab.Starved), func(t *testing.T, r *Report) {
			if len(r.Starvations) != 1 || r.Starvations[0].Buyer != 2 || r.Starvations[0].Passed != 3 {
				t.Errorf("%+v", r.Starvations)
			}
		}},
		{"an order at its own work is busy, not waiting: those that begin meanwhile do not pass it (a lock-free sale)", func(b *hb) {
			b.h.Stock = 5
			b.begin(1, 1).work(1)
			for o, n := 2, 5; o <= 4; o, n = o+1, n-1 {
				b.begin(o, o).work(o).read(o, n).write(o, n-1).end(o, "")
			}
			b.read(1, 2).write(1, 1).end(1, "")
		}, kinds(), nil},
		{"an order that works, then waits in Lock, is passed by those that begin while it waits", func(b *hb) {
			b.h.Stock = 6
			b.begin(1, 1).work(1)
			b.begin(2, 2).read(2, 6).write(2, 5).end(2, "") // began while 1 worked: no pass
			b.add(history.Record{Kind: history.RecCall, What: history.CallLock, Buyer: 1, Order: 1, Call: 99})
			for o, n := 3, 5; o <= 5; o, n = o+1, n-1 {
				b.begin(o, o).read(o, n).write(o, n-1).end(o, "")
			}
			b.add(history.Record{Kind: history.RecCall, What: history.CallLock, End: true, Buyer: 1, Order: 1, Call: 99})
			b.read(1, 2).write(1, 1).end(1, "")
		}, kinds(vocab.Starved), func(t *testing.T, r *Report) {
			if len(r.Starvations) != 1 || r.Starvations[0].Buyer != 1 || r.Starvations[0].Passed != 3 {
				t.Errorf("%+v", r.Starvations)
			}
		}},
		{"an order at its own work while the lock sits free is busy, not waiting: not idle", func(b *hb) {
			b.h.Stock = 4
			b.begin(9, 9).work(9) // works the whole run and never asks for the lock
			for i, o := range []int{1, 2, 3, 4} {
				b.at = time.Duration(i) * 100 * msec
				b.begin(o, o).lock(o, true, b.set(o, k, "", "v", -1)).read(o, 4-i).write(o, 3-i).unlock(o, b.del(o, k, "v")).end(o, "")
			}
		}, kinds(), func(t *testing.T, r *Report) {
			if r.IdleShare != 0 || r.WaitedReleases != 0 {
				t.Errorf("idle %.2f after %d of %d releases", r.IdleShare, r.IdleReleases, r.WaitedReleases)
			}
		}},
		{"a lock that sits free while an order waits is idle", func(b *hb) {
			b.h.Stock = 4
			b.begin(9, 9) // a waiter for the whole run, that never gets in
			for i, o := range []int{1, 2, 3, 4} {
				b.at = time.Duration(i) * 100 * msec
				b.begin(o, o).lock(o, true, b.set(o, k, "", "v", -1)).read(o, 4-i).write(o, 3-i).unlock(o, b.del(o, k, "v")).end(o, "")
			}
		}, kinds(vocab.Starved, vocab.Idle), func(t *testing.T, r *Report) {
			if r.IdleShare < 0.5 || r.IdleReleases != 3 {
				t.Errorf("idle %.2f after %d of %d releases", r.IdleShare, r.IdleReleases, r.WaitedReleases)
			}
		}},
		{"an order that read the stock before its Lock waits in that Lock: a read before Lock is no entry", func(b *hb) {
			b.h.Stock = 4
			b.begin(9, 9).read(9, 4) // a peek, or a stale count, then a Lock that never returns
			b.add(history.Record{Kind: history.RecCall, What: history.CallLock, Buyer: 9, Order: 9, Call: 99})
			for i, o := range []int{1, 2, 3, 4} {
				b.at = time.Duration(i) * 100 * msec
				b.begin(o, o).lock(o, true, b.set(o, k, "", "v", -1)).read(o, 4-i).write(o, 3-i).unlock(o, b.del(o, k, "v")).end(o, "")
			}
		}, kinds(vocab.Starved, vocab.Idle), func(t *testing.T, r *Report) {
			if r.IdleShare < 0.5 || r.IdleReleases != 3 {
				t.Errorf("idle %.2f after %d of %d releases", r.IdleShare, r.IdleReleases, r.WaitedReleases)
			}
			if len(r.Starvations) != 1 || r.Starvations[0].Buyer != 9 {
				t.Errorf("starvations %+v, want buyer 9's", r.Starvations)
			}
		}},
		{"an order that gives up while the lock sits free was turned away, not kept waiting: not idle", func(b *hb) {
			b.h.Stock = 4
			for i, o := range []int{1, 2, 3, 4} {
				b.at = time.Duration(i) * 100 * msec
				b.begin(o, o).lock(o, true, b.set(o, k, "", "v", -1)).read(o, 4-i).write(o, 3-i)
				b.begin(5, 10+o) // a Lock that tries once, refused while o holds
				b.unlock(o, b.del(o, k, "v")).end(o, "")
				b.end(10+o, "") // it says no just after the release; its buyer pauses before the next
			}
		}, kinds(vocab.LostSales), func(t *testing.T, r *Report) {
			if r.IdleShare != 0 || r.WaitedReleases != 0 {
				t.Errorf("idle %.2f after %d of %d releases", r.IdleShare, r.IdleReleases, r.WaitedReleases)
			}
		}},
		{"the end-of-run probe could not get in: stuck, the lock of its last holder", func(b *hb) {
			b.begin(1, 1).lock(1, true, b.set(1, k, "", "a", -1)).read(1, 3).write(1, 2).end(1, "")
			b.add(history.Record{Kind: history.RecProbe, What: history.ProbeStuck, D: 400 * msec})
		}, kinds(vocab.Stuck), func(t *testing.T, r *Report) {
			if !r.Stuck || r.StuckOwner != 1 || !strings.Contains(r.Explain[0].Sentence, "buyer 1") {
				t.Errorf("stuck %v owner %d %v", r.Stuck, r.StuckOwner, r.Explain)
			}
		}},
		{"a failed nested Lock: reentry-failed", func(b *hb) {
			b.begin(1, 1).add(history.Record{Kind: history.RecNested, Buyer: 1, Err: "refused"})
		}, kinds(vocab.ReentryFailed), nil},
		{"more than FloodLimit commands an order: flood", func(b *hb) {
			b.begin(1, 1)
			for range vocab.FloodLimit + 1 {
				b.get(1, k)(0)
			}
			b.read(1, 3).write(1, 2).end(1, "")
		}, kinds(vocab.Flood), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHB("", 3)
			tc.write(b)
			r := b.judge()
			if !slices.Equal(r.Found, tc.want) {
				t.Errorf("found %v, want %v\n%s", r.Found, tc.want, r.Text())
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestSecondCheckerAgrees: porcupine's reading of the shop agrees with the referee's oversold on
// a lost update and on a refused stale write, and a confirmed order that took nothing off the
// shelf — oversold by the count, explained one sale after another — is named as a disagreement.
func TestSecondCheckerAgrees(t *testing.T) {
	lost := newHB(vocab.Scenario("contention"), 3, vocab.Overlap, vocab.Oversold, vocab.LostSales)
	lost.begin(1, 1).begin(2, 2).read(1, 3).read(2, 3).write(1, 2).write(2, 2).end(1, "").end(2, "")
	if r := lost.judge(); r.Linearizable || r.Disagree != "" || r.Oversold != 1 {
		t.Errorf("a lost update: linearizable %v, disagree %q, oversold %d", r.Linearizable, r.Disagree, r.Oversold)
	}
	fenced := newHB(vocab.Scenario("pause"), 3, vocab.Overlap, vocab.Oversold)
	fenced.begin(1, 1).begin(2, 2).read(1, 3).read(2, 3).write(2, 2)
	fenced.seq++
	fenced.add(history.Record{Kind: history.RecStock, What: history.StockWriteRefused, Buyer: 1, Order: 1, Seq: fenced.seq, Stock: 2, Token: 1})
	if r := fenced.judge(); !r.Linearizable || r.Disagree != "" || !strings.Contains(r.SecondOpinion, "refused the stale write") {
		t.Errorf("a refused stale write: linearizable %v, %q, disagree %q", r.Linearizable, r.SecondOpinion, r.Disagree)
	}
	free := newHB(vocab.Scenario("contention"), 3, vocab.Overlap, vocab.Oversold, vocab.LostSales)
	free.begin(1, 1).read(1, 3).write(1, 3).end(1, "")
	if r := free.judge(); !r.Linearizable || r.Oversold != 1 || r.Disagree == "" {
		t.Errorf("a sale that took nothing: linearizable %v, oversold %d, disagree %q", r.Linearizable, r.Oversold, r.Disagree)
	}
}

// TestJudgeSaysWhatItCouldNotSee: a change nobody sent, a fault that found nowhere to strike, a
// run past its deadline: the kinds they touch are unjudged, never a quiet ✓.
func TestJudgeSaysWhatItCouldNotSee(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sc     vocab.Scenario
		judged []vocab.Kind
		rec    history.Record
		want   []vocab.Kind
	}{
		{"unseen", vocab.Scenario("slow"), []vocab.Kind{vocab.Overlap, vocab.Oversold, vocab.ForeignRelease}, history.Record{Kind: history.RecUnseen, Keys: []history.KeyChange{{Key: lockName, Before: "a"}}}, []vocab.Kind{vocab.ForeignRelease}},
		{"a stranger", vocab.Scenario("unlock-race"), []vocab.Kind{vocab.ForeignRelease}, history.Record{Kind: history.RecBlind, What: "a client sent commands", Kinds: vocab.Kinds}, []vocab.Kind{vocab.ForeignRelease}},
		{"nowhere", vocab.Scenario("unlock-race"), []vocab.Kind{vocab.ForeignRelease}, history.Record{Kind: history.RecNowhere, What: "the unlock-race found nowhere to strike"}, []vocab.Kind{vocab.ForeignRelease}},
		{"timeout", vocab.Scenario("contention"), []vocab.Kind{vocab.Overlap, vocab.Oversold, vocab.LostSales}, history.Record{Kind: history.RecTimeout, What: "past its deadline"}, []vocab.Kind{vocab.Overlap, vocab.Oversold, vocab.LostSales}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHB(tc.sc, 3, tc.judged...)
			b.begin(1, 1).read(1, 3).write(1, 2).end(1, "").add(tc.rec)
			b.add(history.Record{Kind: history.RecProbe, What: history.ProbeStuck, OK: true})
			r := b.judge()
			if !slices.Equal(r.Unjudged, tc.want) || r.Complete() {
				t.Errorf("unjudged %v, want %v\n%s", r.Unjudged, tc.want, r.Text())
			}
		})
	}
}

// TestLiveStuckWaitsForTheLease: a live session calls a lock stuck only once its owner is done
// with it (dead, or its orders ended) a TTL ago, and only when the lock never expires: a lock
// with a lease frees itself, however long the lab shows it held.
func TestLiveStuckWaitsForTheLease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   time.Duration
		stuck bool
	}{{"no TTL", -1, true}, {"a TTL", 2 * time.Second, false}} {
		t.Run(tc.name, func(t *testing.T) {
			b := newHB("", 50)
			b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "a", tc.ttl)).read(1, 50)
			b.add(history.Record{Kind: history.RecProcess, What: history.ProcessCrashed, Buyer: 1}).end(1, history.ExcuseDead)
			var said []string
			r := NewReferee(b.h, func(e Event) {
				if e.Kind == EvViolation {
					said = append(said, e.Sentence)
				}
			})
			for _, rec := range b.h.Records {
				r.Add(rec)
			}
			r.Add(history.Record{Kind: history.RecClock, At: b.at + history.DefaultTiming().TTL/2})
			if len(said) != 0 {
				t.Fatalf("stuck before the owner had been gone a TTL: %v", said)
			}
			r.Add(history.Record{Kind: history.RecClock, At: b.at + 2*history.DefaultTiming().TTL})
			if got := len(said) == 1 && strings.Contains(said[0], "buyer 1, whose process has died"); got != tc.stuck {
				t.Errorf("stuck said %v, want %v", said, tc.stuck)
			}
		})
	}
}

// TestJudgeIsAFunctionOfTheHistory: the same history judged twice, and once more after a trip
// through JSON, gives the same report.
func TestJudgeIsAFunctionOfTheHistory(t *testing.T) {
	b := newHB(vocab.Scenario("slow"), 3, vocab.Overlap, vocab.Oversold, vocab.ForeignRelease)
	b.begin(1, 1).begin(2, 2).lock(1, true, b.set(1, lockName, "", "a", 200*msec)).read(1, 3)
	b.add(history.Record{Kind: history.RecLapse, Keys: []history.KeyChange{{Key: lockName, Before: "a"}}, Due: 201 * msec})
	b.lock(2, true, b.set(2, lockName, "", "b", 200*msec)).read(2, 3).write(1, 2)
	b.unlock(1, b.del(1, lockName, "b")).write(2, 2).end(1, "").end(2, "")
	b.add(history.Record{Kind: history.RecProbe, What: history.ProbeStuck, OK: true})
	first := Judge(&b.h)
	var buf bytes.Buffer
	if err := history.WriteHistory(&buf, &b.h); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadHistory(&buf)
	if err != nil {
		t.Fatal(err)
	}
	again := Judge(h)
	first.History, again.History = nil, nil
	if !reflect.DeepEqual(first, again) {
		t.Errorf("judged again:\n%+v\nfirst:\n%+v", again, first)
	}
	if want := []vocab.Kind{vocab.Overlap, vocab.Oversold, vocab.ForeignRelease}; !slices.Equal(first.Violations, want) {
		t.Errorf("violations %v, want %v\n%s", first.Violations, want, first.Text())
	}
}

// lockName is the shop's lock key, as the arena names it (arena.LockName).
const lockName = "lock:product:1001"

// TestLiveStuckOnceABuyerIsTurnedAway: step 02 under a live error — the owner's order ended
// without its DEL, and its process orders again at once, so it is never idle: the lock that never
// expires is stuck once a buyer who came after was turned away, not before.
func TestLiveStuckOnceABuyerIsTurnedAway(t *testing.T) {
	b := newHB("", 50)
	b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "a", -1)).read(1, 50).end(1, history.ExcuseFault)
	b.begin(1, 2) // its next order, under way: its process is never idle
	var said []string
	r := NewReferee(b.h, func(e Event) {
		if e.Kind == EvViolation && e.Viol == vocab.Stuck {
			said = append(said, e.Sentence)
		}
	})
	for _, rec := range b.h.Records {
		r.Add(rec)
	}
	r.Add(history.Record{Kind: history.RecClock, At: b.at + 2*history.DefaultTiming().TTL})
	if len(said) != 0 {
		t.Fatalf("stuck with nobody turned away: %v", said)
	}
	// buyer 2 comes, a TTL on, is refused, and its order sells nothing: turned away with 50 on
	// the shelf
	b.at += history.DefaultTiming().TTL
	b.begin(2, 3).lock(3, false, b.get(2, lockName)).end(3, "")
	for _, rec := range b.h.Records[len(b.h.Records)-5:] {
		r.Add(rec)
	}
	r.Add(history.Record{Kind: history.RecClock, At: b.at + history.DefaultTiming().TTL/4})
	if len(said) != 1 || !strings.Contains(said[0], "buyer 1, whose order has ended") || !strings.Contains(said[0], "turned away") {
		t.Errorf("stuck said %v, want it once, naming buyer 1 and the buyer turned away", said)
	}
}

// TestFailoverToAnOlderValueLosesTheHold: the promoted replica has the lock key with an older value
// (buyer 4's, whose DEL never reached it) instead of buyer 1's: buyer 1's hold is lost all the
// same, and the older value is nobody's hold.
func TestFailoverToAnOlderValueLosesTheHold(t *testing.T) {
	b := newHB(vocab.Scenario("failover"), 3, vocab.Overlap, vocab.Oversold)
	b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "b1", -1)).read(1, 3)
	var kinds []EventKind
	r := NewReferee(b.h, func(e Event) { kinds = append(kinds, e.Kind) })
	for _, rec := range b.h.Records {
		r.Add(rec)
	}
	r.Add(history.Record{Kind: history.RecNode, What: history.NodeFailover, OK: true, At: b.at + msec,
		Keys: []history.KeyChange{{Key: lockName, Before: "b1", After: "b4", TTL: 100 * msec}}})
	if !slices.Contains(kinds, EvLost) {
		t.Errorf("no lost lock: events %v", kinds)
	}
	if keys := r.Live().HoldKeys(1); len(keys) != 0 {
		t.Errorf("buyer 1 still holds %v after its write was lost", keys)
	}
	if _, owner, ok := r.Live().HeldKey(0); ok {
		t.Errorf("the older value is held by buyer %d; it is nobody's hold", owner)
	}
}

// TestAPeekSaysItPeeks: in a step that takes a lock, an order's read before its Lock said yes is
// a peek, and its words say so; its read once Lock said yes is inside. In a step that takes no
// lock (the header's NoLock) the same read is inside. Hazard: Granted is false for both reads a
// step without a lock makes and for a peek; the event's NoLock, from the header, tells them
// apart, and "is inside" for a peek contradicted the picture, which draws its order waiting.
func TestAPeekSaysItPeeks(t *testing.T) {
	locked := newHB("", 3)
	locked.begin(1, 1).read(1, 3)
	locked.lock(1, true, locked.set(1, lockName, "", "a", -1))
	locked.read(1, 3).write(1, 2)
	free := newHB("", 3)
	free.h.NoLock = true
	free.begin(1, 1).read(1, 3).write(1, 2)
	for _, c := range []struct {
		name  string
		b     *hb
		words []string
		peeks []bool
	}{
		{"a lock", locked, []string{"buyer 1 peeks before its Lock said yes: read stock 3", "buyer 1 is inside: read stock 3"}, []bool{true, false}},
		{"no lock", free, []string{"buyer 1 is inside: read stock 3"}, []bool{false}},
	} {
		var words []string
		var peeks []bool
		r := NewReferee(c.b.h, func(e Event) {
			if e.Kind == EvEnter {
				words, peeks = append(words, e.Words()), append(peeks, e.Peek())
			}
		})
		for _, rec := range c.b.h.Records {
			r.Add(rec)
		}
		if !slices.Equal(words, c.words) || !slices.Equal(peeks, c.peeks) {
			t.Errorf("%s: the reads say %q, peek %v; want %q, %v", c.name, words, peeks, c.words, c.peeks)
		}
	}
}

// TestPeekIsOneRule: Peek is a read (EvEnter) with no Lock said yes in a step that takes one;
// nothing else is a peek. Hazard: a caller's rule of its own drifts from it.
func TestPeekIsOneRule(t *testing.T) {
	for _, c := range []struct {
		e    Event
		peek bool
	}{
		{Event{Kind: EvEnter}, true},
		{Event{Kind: EvEnter, Granted: true}, false},
		{Event{Kind: EvEnter, NoLock: true}, false},
		{Event{Kind: EvWrite}, false},
		{Event{Kind: EvCommand}, false},
	} {
		if got := c.e.Peek(); got != c.peek {
			t.Errorf("%+v: Peek() = %v, want %v", c.e, got, c.peek)
		}
	}
}
