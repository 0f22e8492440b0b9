package referee

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Issue 34's classes, as written-down histories: a re-entry is no release, and a renewal of a lock
// its renewer did not hold is a foreign renewal.

// events is every event the referee says of b's history, as kinds and buyers: "acquired 1".
func (b *hb) events(kinds ...EventKind) []string {
	var out []string
	r := NewReferee(b.h, func(e Event) {
		if slices.Contains(kinds, e.Kind) {
			s := string(e.Kind) + " " + string(rune('0'+e.Buyer))
			if e.Kind == EvNested {
				s += " depth " + string(rune('0'+e.Depth))
			}
			out = append(out, s)
		}
	})
	for _, rec := range b.h.Records {
		r.Add(rec)
	}
	return out
}

// hash is a command of buyer in call writing a hash lock's count (before → after) with ttl.
func (b *hb) hash(buyer int, name, before, after string, ttl time.Duration) func(int) {
	return func(call int) {
		b.cmd(buyer, call, name, []string{lockName, "owner"}, history.KeyChange{Key: lockName, Before: before, After: after, TTL: ttl})
	}
}

// TestAReentryIsNoRelease: a Lock granted to the process that holds the lock already (11's
// HINCRBY to 2, or 06's count in the process, which sends nothing) is a re-entry: the hold goes
// on, entered twice, and the nested Unlock gives one entry back; the one release is the outer
// Unlock's. Before, 11–14 × reentrant said buyer 1 released and took its own lock again at the
// nested Lock's return.
func TestAReentryIsNoRelease(t *testing.T) {
	const ttl = 200 * msec
	hashLock := func() *hb {
		b := newHB(vocab.Scenario("reentrant"), 3, vocab.ReentryFailed, vocab.Overlap)
		b.begin(1, 1).lock(1, true, b.hash(1, "evalsha", "", "h:owner=1", ttl))
		b.read(1, 3).work(1)
		b.lock(1, true, b.hash(1, "evalsha", "h:owner=1", "h:owner=2", ttl))
		b.unlock(1, b.hash(1, "evalsha", "h:owner=2", "h:owner=1", ttl))
		b.write(1, 2).unlock(1, b.del(1, lockName, "h:owner=1")).end(1, "")
		return b
	}
	processCount := func() *hb {
		b := newHB(vocab.Scenario("reentrant"), 3, vocab.ReentryFailed, vocab.Overlap)
		b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "me", ttl))
		b.read(1, 3).work(1)
		b.lock(1, true) // the count lives in the process: nothing sent
		b.unlock(1)
		b.write(1, 2).unlock(1, b.del(1, lockName, "me")).end(1, "")
		return b
	}
	want := []string{"acquired 1", "nested 1 depth 2", "nested 1 depth 1", "released 1"}
	for name, b := range map[string]*hb{"a hash's count": hashLock(), "a count in the process": processCount()} {
		if got := b.events(EvAcquired, EvReleased, EvNested, EvForeign); !slices.Equal(got, want) {
			t.Errorf("%s: events %v, want %v", name, got, want)
		}
		if rep := b.judge(); !rep.Complete() || len(rep.Violations) > 0 {
			t.Errorf("%s: %v\n%s", name, rep.Violations, rep.Text())
		}
	}
	// The control: a lock that is not re-entrant, whose nested Lock takes it again after the
	// nested helper's own Unlock had deleted it, holds twice, released twice.
	b := newHB(vocab.Scenario("reentrant"), 3, vocab.ReentryFailed, vocab.Overlap)
	b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "me", ttl))
	b.read(1, 3).work(1)
	b.unlock(1, b.del(1, lockName, "me"))
	b.lock(1, true, b.set(1, lockName, "", "me", ttl))
	b.write(1, 2).unlock(1, b.del(1, lockName, "me")).end(1, "")
	if got, want := b.events(EvAcquired, EvReleased, EvNested), []string{"acquired 1", "released 1", "acquired 1", "released 1"}; !slices.Equal(got, want) {
		t.Errorf("not re-entrant: events %v, want %v", got, want)
	}
}

// pexpire is a command of buyer (in call, 0: none) that moves key's lease to ttl, its value v
// unchanged.
func (b *hb) pexpire(buyer, call int, name, v string, ttl time.Duration) *hb {
	return b.cmd(buyer, call, name, []string{lockName, "200"}, history.KeyChange{Key: lockName, Before: v, After: v, TTL: ttl})
}

// TestForeignRenewal: a process that extends the lease of a lock another process holds (PEXPIRE,
// a renewing script, SET XX of the same value) renews a lock it did not hold: foreign-renewal,
// judged where the scenario judges it, "also seen" where it does not. Its holder's own renewal is
// none, nor is a command that moves the lease nearer, nor one that extends a line of waiters the
// hold keeps (not the lock it created).
func TestForeignRenewal(t *testing.T) {
	const ttl = 200 * msec
	// buyer 1's watchdog, not stopped by its Unlock, renews buyer 2's lock with PEXPIRE.
	stray := func(sc vocab.Scenario, judged ...vocab.Kind) *hb {
		b := newHB(sc, 3, judged...)
		b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "one", ttl))
		b.read(1, 3).write(1, 2).unlock(1, b.del(1, lockName, "one")).end(1, "")
		b.begin(2, 2).lock(2, true, b.set(2, lockName, "", "two", ttl))
		b.read(2, 2)
		b.pexpire(1, 0, "pexpire", "two", ttl)
		b.write(2, 1).unlock(2, b.del(2, lockName, "two")).end(2, "")
		return b
	}
	rep := stray(vocab.Scenario("slow"), vocab.Overlap, vocab.Oversold, vocab.ForeignRelease, vocab.ForeignRenewal).judge()
	if !slices.Equal(rep.Violations, []vocab.Kind{vocab.ForeignRenewal}) || len(rep.ForeignRenewals) != 1 ||
		!strings.Contains(rep.Explain[0].Sentence, "buyer 1 extended the lease of the lock that buyer 2 held (PEXPIRE lock") {
		t.Errorf("judged: %v\n%s", rep.Violations, rep.Text())
	}
	rep = stray(vocab.Scenario("contention"), vocab.Overlap, vocab.Oversold, vocab.LostSales).judge()
	if len(rep.Violations) > 0 || !slices.Contains(rep.Found, vocab.ForeignRenewal) || !strings.Contains(rep.Text(), "also seen, not judged by contention: foreign-renewal") {
		t.Errorf("not judged: %v, found %v\n%s", rep.Violations, rep.Found, rep.Text())
	}
	// a crashed holder's lock kept alive by another's stray watchdog: for nobody
	b := newHB("", 3)
	b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "one", ttl)).read(1, 3)
	b.add(history.Record{Kind: history.RecProcess, What: history.ProcessCrashed, Buyer: 1}).end(1, history.ExcuseDead)
	b.pexpire(2, 0, "evalsha", "one", ttl)
	if rep := b.judge(); !slices.Contains(rep.Violations, vocab.ForeignRenewal) || !strings.Contains(rep.Text(), "whose process had died: a lock kept alive for nobody") {
		t.Errorf("dead holder: %v\n%s", rep.Violations, rep.Text())
	}
	// controls: no foreign renewal
	for name, f := range map[string]func(b *hb){
		"its holder's own renewal": func(b *hb) { b.pexpire(2, 0, "pexpire", "two", ttl) },
		"a lease moved nearer":     func(b *hb) { b.pexpire(1, 0, "pexpire", "two", ttl/4) },
		"a renewal that changed nothing (an owner-checked script of buyer 1)": func(b *hb) {
			b.cmd(1, 0, "evalsha", []string{lockName})
		},
		"SET XX of another value (a takeover, not a renewal)": func(b *hb) {
			b.cmd(1, 0, "set", []string{lockName, "one", "XX"}, history.KeyChange{Key: lockName, Before: "two", After: "one", TTL: ttl})
		},
	} {
		b := newHB(vocab.Scenario("slow"), 3, vocab.ForeignRenewal)
		b.begin(2, 2).lock(2, true, b.set(2, lockName, "", "two", ttl))
		b.at += 50 * msec
		f(b)
		if rep := b.judge(); slices.Contains(rep.Found, vocab.ForeignRenewal) {
			t.Errorf("%s: found a foreign renewal\n%s", name, rep.Text())
		}
	}
	// a waiter that extends the line of waiters the holder's Lock wrote into (a key the hold keeps,
	// not the lock it created) renews nobody's lock
	b = newHB(vocab.Scenario("slow"), 3, vocab.ForeignRenewal)
	const line = "lock:product:1001:queue"
	b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "one", ttl),
		func(call int) {
			b.cmd(1, call, "rpush", []string{line}, history.KeyChange{Key: line, Before: "x", After: "x;one", TTL: ttl})
		})
	b.begin(2, 2).lock(2, false, func(call int) {
		b.cmd(2, call, "pexpire", []string{line}, history.KeyChange{Key: line, Before: "x;one", After: "x;one", TTL: 2 * ttl})
	})
	if rep := b.judge(); slices.Contains(rep.Found, vocab.ForeignRenewal) {
		t.Errorf("a line of waiters: found a foreign renewal\n%s", rep.Text())
	}
}

// TestErrorRepliesAreNamed: an error reply is named once with its count, with the server and the
// release that runs the command where the server does not; a NOSCRIPT its process answers at once
// with the script itself (go-redis's Script: EVALSHA, then EVAL) failed nothing and is not named.
func TestErrorRepliesAreNamed(t *testing.T) {
	const ttl = 200 * msec
	failing := func(b *hb, name, err string, lacks bool) func(int) {
		return func(call int) {
			b.nseq++
			r := history.Record{Kind: history.RecCmd, Buyer: b.order[1], Call: call, Seq: b.nseq, Server: "Redis 7.0.15",
				Cmds: []history.Cmd{{Name: "hsetnx", Args: []string{lockName}, Err: "EXECABORT Transaction discarded because of previous errors."},
					{Name: name, Args: []string{lockName}, Err: err}}, Atomic: true}
			if lacks {
				r.Lacks = []string{strings.ToUpper(name)}
			}
			b.add(r)
		}
	}
	b := newHB(vocab.Scenario("contention"), 3, vocab.Overlap, vocab.Oversold, vocab.LostSales)
	for o := 1; o <= 2; o++ {
		b.begin(1, o).lock(o, false, failing(b, "hpexpire", "ERR unknown command 'HPEXPIRE', with args beginning with: 'lock'", true))
		b.add(history.Record{Kind: history.RecOrder, What: history.OrderEnd, Buyer: 1, Order: o, Err: "EXECABORT Transaction discarded because of previous errors."})
	}
	rep := b.judge()
	want := "your Lock's HPEXPIRE failed: ERR unknown command 'HPEXPIRE' — this server is Redis 7.0.15; HPEXPIRE needs Redis 7.4 (2 times)"
	if len(rep.Replies) != 1 || !slices.Contains(rep.Notes, want) || !rep.FailedByReplies {
		t.Errorf("replies %+v, notes %q (failed by replies %v), want %q", rep.Replies, rep.Notes, rep.FailedByReplies, want)
	}
	// the script fallback
	b = newHB(vocab.Scenario("contention"), 3, vocab.Overlap, vocab.Oversold, vocab.LostSales)
	b.begin(1, 1).lock(1, true, func(call int) {
		b.nseq++
		b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Call: call, Seq: b.nseq, Cmds: []history.Cmd{{Name: "evalsha", Args: []string{"abc", "1", lockName}, Err: "NOSCRIPT No matching script. Please use EVAL."}}})
	}, b.set(1, lockName, "", "one", ttl))
	b.h.Records[len(b.h.Records)-2].Cmds[0].Name = "eval"
	if rep := b.judge(); len(rep.Replies) != 0 {
		t.Errorf("a NOSCRIPT answered with the script is named: %+v", rep.Replies)
	}
	// no fallback: named
	b = newHB(vocab.Scenario("contention"), 3, vocab.Overlap, vocab.Oversold, vocab.LostSales)
	b.begin(1, 1).lock(1, true, b.set(1, lockName, "", "one", ttl)).read(1, 3).write(1, 2)
	b.unlock(1, func(call int) {
		b.nseq++
		b.add(history.Record{Kind: history.RecCmd, Buyer: 1, Call: call, Seq: b.nseq, Cmds: []history.Cmd{{Name: "evalsha", Args: []string{"abc", "1", lockName}, Err: "NOSCRIPT No matching script. Please use EVAL."}}})
	}).end(1, "")
	if rep := b.judge(); len(rep.Replies) != 1 || rep.Replies[0].String() != "your Unlock's EVALSHA failed: NOSCRIPT No matching script. Please use EVAL." || rep.FailedByReplies {
		t.Errorf("NOSCRIPT: %+v", rep.Replies)
	}
}
