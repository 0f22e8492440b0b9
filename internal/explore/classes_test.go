package explore_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/steps"
)

// Issue 25: explore finds, for the round-three audit's lock classes (issue 24), a break or a
// false alarm, and the referee judges it right. Each test explores from seed 1 for a fixed number
// of programs (the locks of classlocks_test.go), in virtual time.

// safeFaults are every move but those on a lock node (failover, restart). Hazard: those two close
// connections that go-redis dials again after a random back-off (TestASeedIsOneRun), so with them
// a seed's program need not play one run, and the program that first breaks a lock could move.
var safeFaults = []history.Fault{
	arena.FaultError, arena.FaultCrash, arena.FaultSlow, arena.FaultPause, arena.FaultUnlockRace,
	arena.FaultReentrant, arena.FaultPartition, arena.FaultSecond, arena.FaultLostReply,
}

// classRequest asks to explore from seed 1 for at most programs programs of the moves faults,
// judged for kinds, until the first that breaks the lock (First). Hazard: its wall-clock budget
// is an hour, so the count alone ends it; a lock that takes long per program takes the test long.
func classRequest(programs int, faults []history.Fault, kinds ...vocab.Kind) explore.Request {
	return explore.Request{Seed: 1, Budget: time.Hour, Programs: programs, Buyers: 3, Faults: faults, Kinds: kinds, First: true}
}

// explored explores st as req asks, each program in a bubble of t. Hazard: it fails t at once
// where exploring stopped short.
func explored(t *testing.T, st *steps.Step, req explore.Request) explore.Result {
	t.Helper()
	res := explore.Explore(st, req, bubble(t), nil)
	if res.Err != "" {
		t.Fatalf("%s: %s", st.Slug, res.Err)
	}
	return res
}

// mustFind fails t unless res found a program that broke the lock the way want, shrunk to at
// most 3 buyers and 2 faults that break it the same way; it logs where, and the shrunk program in
// words. Hazard: the way is the first kind of the verdict among those judged, so a request
// judged for one kind asks for that kind alone.
func mustFind(t *testing.T, res explore.Result, want vocab.Kind) *explore.Found {
	t.Helper()
	if len(res.Map) == 0 {
		t.Fatalf("%s: nothing broke it in %d programs from seed %d; want %s", res.Step, res.Programs, res.Seed, want)
	}
	f := res.Map[0]
	if f.Kind != want || explore.Way(f.Report) != want {
		t.Fatalf("%s: program %d broke it %s, shrunk %v; want %s\n%s", res.Step, res.Programs, f.Kind, f.Report.Violations, want, f.Report.Text())
	}
	if b, n := f.Program.Size(); b > 3 || n > 2 {
		t.Errorf("%s: shrunk to %d buyers and %d faults", res.Step, b, n)
	}
	t.Logf("%s: program %d of seed %d broke it %s; shrunk in %d tries to:\n  %s\n%s", res.Step, res.Programs, res.Seed, f.Kind,
		f.Shrink, strings.Join(f.Lines, "\n  "), f.Report.Text())
	return f
}

// mustNotFind fails t unless res played all its programs, each to a verdict, and none broke the
// lock: a correct lock has no false alarm there. Hazard: it holds only for the kinds and moves
// the request asked for.
func mustNotFind(t *testing.T, res explore.Result, programs int) {
	t.Helper()
	if len(res.Map) > 0 {
		f := res.Map[0]
		t.Fatalf("%s: program %d of seed %d broke it %s, a false alarm; shrunk to:\n  %s\n%s", res.Step, res.Programs, res.Seed, f.Kind,
			strings.Join(f.Lines, "\n  "), f.Report.Text())
	}
	if res.Programs != programs || res.NoVerdict > 0 {
		t.Fatalf("%s: %d programs played of %d, %d without a verdict", res.Step, res.Programs, programs, res.NoVerdict)
	}
}

// goRace is a program that freezes buyer 1 before its Unlock's commands, one sent from a
// goroutine once Unlock has returned among them, until buyer 2, who comes after buyer 1's lease
// ran out, is inside.
var goRace = explore.Program{Stock: 2, Buyers: []explore.Buyer{
	{Orders: []explore.Order{{Fault: arena.FaultUnlockRace}}},
	{Orders: []explore.Order{{After: 10, Work: 4}}},
}}

// TestExploreFindsAGoroutinesRelease is issue 24's class 4, a release from another goroutine of
// the process: an unconditional UNLINK sent from a goroutine once Unlock has returned deletes
// whoever's lock is there by then, and so does FLUSHDB, a release that names no key. Explore must
// find the foreign release (with no fault at all: the goroutine's release is late by itself) and
// shrink it; the unlock-race must strike such a command, which belongs to no call (goRace); the
// control, an owner-checked script sent from a goroutine, raced the same way, breaks nothing, and
// nothing breaks it in the same request's programs.
func TestExploreFindsAGoroutinesRelease(t *testing.T) {
	noLeak(t)
	req := classRequest(40, safeFaults, vocab.ForeignRelease)
	for _, tc := range []struct {
		st  *steps.Step
		cmd string
	}{{classStep("go-unlink", goUnlink), "UNLINK"}, {classStep("flushdb", flushdb), "FLUSHDB"}} {
		mustFind(t, explored(t, tc.st, req), vocab.ForeignRelease)
		rep, err := explore.Run(tc.st, goRace, req.Kinds, bubble(t))
		if err != nil {
			t.Fatal(err)
		}
		if racedBuyer(rep.History, tc.cmd) != 1 || !explore.Shows(rep, vocab.ForeignRelease) {
			t.Errorf("%s under the unlock-race: %v, struck %v\n%s", tc.st.Slug, rep.Violations, explore.Struck(rep.History), rep.Text())
		}
	}
	ctl := classStep("go-checked-del", goCheckedDel)
	rep, err := explore.Run(ctl, goRace, req.Kinds, bubble(t))
	if err != nil {
		t.Fatal(err)
	}
	if racedBuyer(rep.History, "EVAL") == 0 || !rep.Complete() || len(rep.Violations) > 0 {
		t.Errorf("the control under the unlock-race: %v (unjudged %v), struck %v\n%s", rep.Violations, rep.Unjudged, explore.Struck(rep.History), rep.Text())
	}
	req.Programs = 120
	mustNotFind(t, explored(t, ctl, req), req.Programs)
}

// racedBuyer is the buyer an unlock-race struck in h just before a command named one of cmds (0:
// none). Hazard: it reads the fault's words, which name the command it froze before.
func racedBuyer(h *history.History, cmds ...string) int {
	for k, says := range explore.Struck(h) {
		for _, c := range cmds {
			if k.Fault == arena.FaultUnlockRace && strings.Contains(says, "before "+c) {
				return k.Buyer
			}
		}
	}
	return 0
}

// semaphoreFound is what explore found from seed 1 with no moves (program 79) in the sorted-set
// semaphore whose waiters write, shrunk: buyer 1 works 7/8 TTL; buyer 2's retry adds itself just
// before buyer 1's release takes buyer 1 out, then takes itself out, and the set is gone. The
// referee said buyer 2 deleted the lock that buyer 1 held. (With every move but a node's, program
// 42 found the same, a nested Lock's Unlock in place of the release.)
var semaphoreFound = explore.Program{Stock: 1, Buyers: []explore.Buyer{
	{Orders: []explore.Order{{After: 7, Work: 7}}},
	{Orders: []explore.Order{{After: 10}}},
}}

// TestExploreWaitersThatWrite is issue 24's class 1, waiters that write into the lock key: a
// sorted-set semaphore whose waiters add themselves and take themselves out again. A waiter's
// write releases nobody's lock, so no program may find a foreign release in it, nor in the
// control whose waiters write nothing; the same semaphore whose waiter takes itself out by
// deleting the whole set does delete the holder's lock, and explore must find that.
func TestExploreWaitersThatWrite(t *testing.T) {
	noLeak(t)
	req := classRequest(120, safeFaults, vocab.ForeignRelease)
	t.Run("broken", func(t *testing.T) {
		mustFind(t, explored(t, classStep("zset-del-waiter", zsetDelWaiter), classRequest(40, safeFaults, vocab.ForeignRelease)), vocab.ForeignRelease)
	})
	t.Run("control", func(t *testing.T) {
		mustNotFind(t, explored(t, classStep("zset-script", zsetScript), req), req.Programs)
	})
	t.Run("semaphore", func(t *testing.T) {
		sem := classStep("zset-semaphore", zsetSemaphore)
		rep, err := explore.Run(sem, semaphoreFound, req.Kinds, bubble(t))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Complete() || len(rep.Violations) > 0 {
			t.Fatalf("the found program: %v (unjudged %v)\n%s", rep.Violations, rep.Unjudged, rep.Text())
		}
		mustNotFind(t, explored(t, sem, req), req.Programs)
	})
}

// TestExploreRewriteIsNoFalseAlarm is issue 24's class 3, a release that rewrites the key to
// "free" (SET … XX KEEPTTL) rather than deleting it: the holder's own rewrite is its release, so
// neither it nor the control releasing by DEL is ever a foreign release, whatever the moves.
func TestExploreRewriteIsNoFalseAlarm(t *testing.T) {
	noLeak(t)
	req := classRequest(60, safeFaults, vocab.ForeignRelease)
	for _, st := range []*steps.Step{classStep("rewrite-free", takeFree, rewriteFree), classStep("script-del", takeFree, scriptDel)} {
		mustNotFind(t, explored(t, st, req), req.Programs)
	}
}

// TestExploreRewriteIdlesAsDel is class 3 again: under a Lock that takes a missing or "free" key
// alike, the lock released by a rewrite to "free" plays every program as its control released by
// DEL does, so explore must judge them alike: idle from the same program on, for a back-off
// lock's waiters sleep through the release. The rewrite keeps the lease, and a key that runs out
// before the next Lock comes was free from the rewrite, not from its expiry.
func TestExploreRewriteIdlesAsDel(t *testing.T) {
	noLeak(t)
	sameFinds(t, classRequest(400, []history.Fault{}, vocab.Idle), classStep("script-del", takeFree, scriptDel),
		classStep("rewrite-free", takeFree, rewriteFree),
		"a holder's rewrite to \"free\" that runs out before the next Lock comes is no release: the lock is judged free from its expiry")
}

// TestExploreBlindRewriteIsForeign is class 3 broken: a release that rewrites the key to "free"
// whoever holds it frees the next holder's lock when it is sent after its lease ran out, as a DEL
// whoever holds it deletes it; explore must find both foreign releases in the same program.
func TestExploreBlindRewriteIsForeign(t *testing.T) {
	noLeak(t)
	sameFinds(t, classRequest(40, safeFaults, vocab.ForeignRelease), classStep("del-blind", takeFree, delBlind),
		classStep("rewrite-free-blind", takeFree, rewriteFreeBlind),
		"another process's Unlock that rewrites a held lock to \"free\" is taken for a takeover, not a foreign release")
}

// sameFinds fails t unless explore, as req asks (for one kind), breaks rewrite where it breaks
// del, in the same program and the same way: the two locks play alike, so the referee must judge
// them alike. why names the misjudgement the referee once made here. Hazard: it asks the locks to
// play alike; it does not check that they do.
func sameFinds(t *testing.T, req explore.Request, del, rewrite *steps.Step, why string) {
	t.Helper()
	d := explored(t, del, req)
	want := req.Kinds[0]
	df := mustFind(t, d, want)
	rep, err := explore.Run(rewrite, df.Original, req.Kinds, bubble(t))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete() || !slices.Contains(rep.Violations, want) {
		t.Fatalf("%s's program %d broke it %v; %s does not (%v): %s\n%s", del.Slug, d.Programs, want, rewrite.Slug, rep.Violations, why, rep.Text())
	}
	r := explored(t, rewrite, req)
	rf := mustFind(t, r, want)
	if r.Programs != d.Programs || !reflect.DeepEqual(rf.Original, df.Original) {
		t.Errorf("%s broke in program %d, %s in program %d", rewrite.Slug, r.Programs, del.Slug, d.Programs)
	}
}
