package tui

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/lab/picture"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestFeedNeverBlocks checks the arena's OnEvent returns at once with nobody reading, and that a
// flood of command events is bounded while every other event is kept.
func TestFeedNeverBlocks(t *testing.T) {
	f := newFeed(1)
	for i := 0; i < 3*feedLimit; i++ {
		f.push(referee.Event{Kind: referee.EvCommand, Cmd: &referee.Command{Name: "SET", NX: true, OnLock: true, Label: "SET NX lock", Long: "SET NX lock"}})
	}
	f.push(referee.Event{Kind: referee.EvViolation, Viol: steps.Overlap})
	f.close()
	msg := f.next()().(feedMsg)
	if !msg.done || msg.drops != 2*feedLimit || len(msg.items) != feedLimit+1 || msg.items[feedLimit].ev.Kind != referee.EvViolation {
		t.Fatalf("done %v, drops %d, kept %d", msg.done, msg.drops, len(msg.items))
	}
	f.push(referee.Event{Kind: referee.EvStart}) // after close: dropped, and no reader waits
}

// TestArenaTimeline checks the picture the events make: overlap, spin aggregation, crash and
// frozen glyphs, and that a long session stays within the ring.
func TestArenaTimeline(t *testing.T) {
	tm := history.DefaultTiming()
	a := newArena("", tm, 10, "k", true, 1)
	res := a.res
	at := func(b int) time.Duration { return time.Duration(b) * res }
	a.apply(referee.Event{At: at(0), Kind: referee.EvStart, Buyer: 1})
	a.apply(referee.Event{At: at(0), Kind: referee.EvAcquired, Buyer: 1})
	a.apply(referee.Event{At: at(0), Kind: referee.EvEnter, Buyer: 1, Stock: 10, Granted: true})
	a.apply(referee.Event{At: at(1), Kind: referee.EvStart, Buyer: 2})
	for i := 0; i < 1000; i++ { // buyer 2 spins: one glyph per column, not one per command
		a.apply(referee.Event{At: at(1 + i/200), Kind: referee.EvCommand, Buyer: 2, Cmd: &referee.Command{Name: "SET", NX: true, OnLock: true, Label: "SET NX lock", Long: "SET NX lock"}})
	}
	a.apply(referee.Event{At: at(6), Kind: referee.EvEnter, Buyer: 2, Stock: 10, Granted: true})
	a.apply(referee.Event{At: at(8), Kind: referee.EvCommand, Buyer: 1, Cmd: &referee.Command{Name: "SET", Stock: true, Label: "SET stock", Long: "SET stock"}})
	a.apply(referee.Event{At: at(8), Kind: referee.EvWrite, Buyer: 1, Stock: 9})
	a.apply(referee.Event{At: at(8), Kind: referee.EvExit, Buyer: 1})
	// the referee finds the overlap when buyer 1's write lands: from buyer 2's read to that write
	a.apply(referee.Event{At: at(8), Kind: referee.EvOverlap, Buyer: 2, Other: 1, From: at(6), To: at(8)})
	a.apply(referee.Event{At: at(9), Kind: referee.EvFrozen, Buyer: 2})
	a.apply(referee.Event{At: at(11), Kind: referee.EvCrashed, Buyer: 2})
	a.advance(at(12))
	tl := timeline{a: a}
	tl.SetSize(40, 4)
	lines := tl.View()
	b1, b2 := lines[2], lines[3]
	if !strings.HasPrefix(b1, "b1    ██████▓▓S═") {
		t.Errorf("buyer 1 lane %q: want inside, then overlapping until its SET", b1)
	}
	if !strings.HasPrefix(b2, "b2     ~~~~~▓▓▓‖‖×") || !strings.Contains(b2, "× crashed") {
		t.Errorf("buyer 2 lane %q: want spinning, overlapping, frozen, crashed", b2)
	}
	// A long session: the ring bounds memory, the lanes keep drawing.
	for i := 0; i < 10*ringN; i++ {
		a.apply(referee.Event{At: at(20 + i), Kind: referee.EvCommand, Buyer: 3, Cmd: &referee.Command{Name: "GET", Stock: true, Label: "GET stock", Long: "GET stock"}})
	}
	if len(a.lanes) != 3 || len(a.log) > logN {
		t.Fatalf("lanes %d, log %d", len(a.lanes), len(a.log))
	}
	if l := tl.View()[4]; !strings.Contains(l, "GGGG") {
		t.Errorf("buyer 3 lane after a long run: %q", l)
	}
}

// TestSecondRequestAndPartition: a buyer's two orders are two orders, not one — both inside is
// an overlap on its own lane, the second waiting is said after it; a partition draws ┄ and says
// it; the referee's later overlap pairs are logged once each, the first by its VIOLATION line.
func TestSecondRequestAndPartition(t *testing.T) {
	tm := history.DefaultTiming()
	a := newArena("", tm, 10, "k", true, 1)
	at := func(b int) time.Duration { return time.Duration(b) * a.res }
	ev := func(b int, k referee.EventKind, buyer, order int) {
		a.apply(referee.Event{At: at(b), Kind: k, Buyer: buyer, Order: order, Stock: 10, Granted: k == referee.EvEnter})
	}
	tl := timeline{a: a}
	tl.SetSize(40, 4)
	ev(0, referee.EvStart, 1, 1)
	ev(0, referee.EvAcquired, 1, 0)
	ev(0, referee.EvEnter, 1, 1)
	ev(2, referee.EvStart, 1, 2) // a second request: it waits (step 11) …
	a.advance(at(3))
	if l := tl.View()[2]; !strings.HasPrefix(l, "b1    ███") || !strings.Contains(l, "█ +1 waits") {
		t.Errorf("the second order waits: %q", l)
	}
	ev(4, referee.EvEnter, 1, 2) // … or walks in (step 10)
	a.advance(at(5))
	if l := tl.View()[2]; !strings.HasPrefix(l, "b1    ██████ ") || !strings.Contains(l, "█ 2 inside") {
		t.Errorf("two orders of one buyer inside, not judged yet: %q", l)
	}
	ev(6, referee.EvExit, 1, 1)
	ev(6, referee.EvDone, 1, 1)
	// the referee finds the overlap at the first order's write: the picture draws it back from the
	// second order's read
	a.apply(referee.Event{At: at(6), Kind: referee.EvOverlap, Buyer: 1, Other: 1, From: at(4), To: at(6)})
	a.advance(at(7))
	if l := tl.View()[2]; !strings.Contains(l, "▓▓█") || !strings.HasSuffix(l, "█ inside") {
		t.Errorf("the first order left, the second is inside alone: %q", l)
	}
	ev(8, referee.EvPartitioned, 1, 0)
	a.advance(at(10))
	if l := tl.View()[2]; !strings.Contains(l, "█▒▒") || !strings.HasSuffix(l, "▒ in, cut off") {
		t.Errorf("inside, cut off: %q", l)
	}
	ev(11, referee.EvExit, 1, 2) // a lease guard stops it (step 12)
	a.advance(at(12))
	if l := tl.View()[2]; !strings.Contains(l, "▒▒┄") || !strings.HasSuffix(l, "┄ cut off") {
		t.Errorf("stopped, still cut off: %q", l)
	}
	ev(13, referee.EvHealed, 1, 0)
	a.advance(at(14))
	if l := tl.View()[2]; !strings.HasSuffix(l, "┄┄═         ═ holds") {
		t.Errorf("healed: %q", l)
	}
	log := strings.Join(a.log, "\n")
	for _, want := range []string{"cut off from the lock server", "reaches the lock server again"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	said := "two orders of buyer 1 were both inside the critical section for 12 ms"
	a.apply(referee.Event{At: at(13), Kind: referee.EvOverlap, Buyer: 1, Other: 1, Sentence: said})
	a.apply(referee.Event{At: at(13), Kind: referee.EvViolation, Viol: steps.Overlap, Sentence: said})
	a.apply(referee.Event{At: at(14), Kind: referee.EvOverlap, Buyer: 2, Other: 1, Sentence: "buyer 1 and buyer 2 were both inside"})
	a.apply(referee.Event{At: at(15), Kind: referee.EvOverlap, Buyer: 1, Other: 2, Sentence: "buyer 1 and buyer 2 were both inside"})
	log = strings.Join(a.log, "\n")
	if strings.Count(log, said) != 1 || strings.Count(log, "overlap: buyer 1 and buyer 2") != 1 {
		t.Errorf("each overlapping pair once:\n%s", log)
	}
}

// liveArena is an offline model showing a live arena on step index i, at 100×30.
func liveArena(t *testing.T, i int) *model {
	t.Helper()
	m := newModel(Options{offline: true, Stock: 100})
	t.Cleanup(m.shutdown)
	m.setStep(i) // typed, "1" would wait for a second digit (10–14)
	press(m, "enter")
	if m.ar == nil || m.scr != scrArena {
		t.Fatal("no arena")
	}
	return m
}

// sell makes buyer n read stock `read` and write read-1 at time at.
func sell(a *board, at time.Duration, n, read int) {
	a.apply(referee.Event{At: at, Kind: referee.EvEnter, Buyer: n, Stock: read, Granted: true})
	a.apply(referee.Event{At: at, Kind: referee.EvWrite, Buyer: n, Stock: read - 1})
	a.apply(referee.Event{At: at, Kind: referee.EvExit, Buyer: n})
}

// TestViolationSentencesAreTheReferees: a violation's sentence is the referee's, as it said it,
// stamped with when it said it, while the SHOP line has the numbers as they are now (they move on:
// problem 1); the latest one is one line.
func TestViolationSentencesAreTheReferees(t *testing.T) {
	m := liveArena(t, 3)
	a := m.ar
	ms := time.Millisecond
	a.apply(referee.Event{At: ms, Kind: referee.EvViolation, Viol: steps.LostSales, Sentence: "buyer 2 was turned away while 100 units were on the shelf"})
	for i := 0; i < 19; i++ { // 19 sold properly: 100 → 81
		sell(a, ms*time.Duration(2+i), 1, 100-i)
	}
	sell(a, 300*ms, 3, 100) // a paused buyer's stale write: the shelf goes back to 99
	const said = "20 orders confirmed but only 1 unit left the shelf: 19 oversold"
	a.apply(referee.Event{At: 300 * ms, Kind: referee.EvViolation, Viol: steps.Oversold, Sentence: said})
	sell(a, 310*ms, 1, 99)
	sell(a, 320*ms, 1, 81) // and a write from the old count: the shelf is at 80 again
	v := m.View()
	if a.oversold() != 2 || !strings.Contains(v, "OVERSOLD 2") {
		t.Fatalf("oversold %d:\n%s", a.oversold(), v)
	}
	if !strings.Contains(v, "latest: oversold, at 0.3s: "+said) || !strings.Contains(v, "VIOLATION oversold: "+said) {
		t.Errorf("the oversold sentence is not the referee's, or says not when:\n%s", v)
	}
	if !strings.Contains(v, "first violation, at 0s: buyer 2 was turned away") {
		t.Errorf("first violation:\n%s", v)
	}
}

// TestFirstViolationAgreesWithInvariants: a kind is ✗ in INVARIANTS when, and only when, the
// referee announced it, and the first violation line says the same (problem 2): the lab counts
// commands but judges no flood of its own.
func TestFirstViolationAgreesWithInvariants(t *testing.T) {
	m := liveArena(t, 6)
	a := m.ar
	for i := 0; i < 300; i++ {
		a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvCommand, Buyer: 1, Cmd: &referee.Command{Name: "SET", NX: true, OnLock: true, Label: "SET NX lock", Long: "SET NX lock"}})
	}
	sell(a, 2*time.Millisecond, 1, 100)
	if v := m.View(); strings.Contains(v, "✗ flood") || !strings.Contains(v, "no violation so far") {
		t.Fatalf("a flood the referee did not announce:\n%s", v)
	}
	const said = "101 Redis commands and no order confirmed yet (limit 100 per order)"
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvViolation, Viol: steps.Flood, Sentence: said})
	v := m.View()
	if !strings.Contains(v, "✗ flood") || strings.Contains(v, "no violation so far") || !strings.Contains(v, said) {
		t.Fatalf("flood:\n%s", v)
	}
}

// TestUnjudgedKindsAreNotViolations: in a scenario, a kind it does not judge is "also seen" in the
// log and never the first violation (problem 3).
func TestUnjudgedKindsAreNotViolations(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "4")
	m.scr = scrArena
	m.ar = newArena(steps.Slow, history.DefaultTiming(), -1, "k", true, 1)
	a := m.ar
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvViolation, Viol: steps.LostSales, Sentence: "buyer 3 was turned away while 2 units were on the shelf", NotJudgedBy: "slow"})
	v := m.View()
	if !strings.Contains(v, "also seen (not judged by slow) lost-sales: buyer 3") || strings.Contains(v, "VIOLATION lost-sales") ||
		!strings.Contains(v, "no violation so far") || !strings.Contains(v, "– lost-sales") {
		t.Fatalf("an unjudged kind:\n%s", v)
	}
	a.apply(referee.Event{At: 2 * time.Millisecond, Kind: referee.EvViolation, Viol: steps.Overlap, Sentence: "buyer 1 and buyer 2 were both inside"})
	v = m.View()
	if !strings.Contains(v, "VIOLATION overlap") || !strings.Contains(v, "first violation, at 0s: buyer 1 and buyer 2") || !strings.Contains(v, "✗ overlap") {
		t.Fatalf("a judged kind:\n%s", v)
	}
}

// TestNoVerdictOnPartialEvidence: when the referee could not judge a kind, the panel says ? and
// why, in its words, and never ✓ (nor "held"); what it did find is still shown. A live session
// shows idle as ?: only a finished run judges it.
func TestNoVerdictOnPartialEvidence(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "5")
	m.scr = scrArena
	m.ar = newArena(steps.UnlockRace, history.DefaultTiming(), -1, "k", true, 1)
	const why = "the referee could not see what a command did to the lock on lock-A: NOPERM"
	rep := &referee.Report{Scenario: "unlock-race", Judged: []steps.Kind{steps.ForeignRelease}, InitialStock: 3, FinalStock: 2, Confirmed: 1,
		Untracked: []referee.Blind{{Kinds: []steps.Kind{steps.ForeignRelease}, What: why}},
		Unjudged:  []steps.Kind{steps.ForeignRelease}}
	m.finishBreak(rep, nil)
	v := strings.Join(strings.Fields(m.View()), " ")
	for _, want := range []string{"? foreign-release", "? foreign-release — not seen: " + why, "? no verdict:", "No verdict for step 5 under unlock-race"} {
		if !strings.Contains(v, want) {
			t.Errorf("no verdict: the view lacks %q:\n%s", want, m.View())
		}
	}
	if strings.Contains(v, "✓ foreign-release") || strings.Contains(v, "✓ no violation") || strings.Contains(v, "held under") || m.handoff != nil {
		t.Errorf("a ✓ on partial evidence:\n%s", m.View())
	}
	// what it found stands, beside what it could not see
	m.ar = newArena(steps.Slow, history.DefaultTiming(), -1, "k", true, 1)
	rep = &referee.Report{Scenario: "slow", Judged: []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease}, InitialStock: 3, FinalStock: 2, Confirmed: 2, Oversold: 1,
		Violations: []steps.Kind{steps.Overlap, steps.Oversold},
		Explain: []referee.Finding{{Kind: steps.Overlap, Sentence: "buyer 1 and buyer 2 were both inside the critical section for 52 ms"},
			{Kind: steps.Oversold, Sentence: "2 orders confirmed but only 1 unit left the shelf: 1 oversold"}},
		TimedOut: "the scenario ran past its deadline of 5s",
		Unjudged: []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease}}
	m.finishBreak(rep, nil)
	v = strings.Join(strings.Fields(m.View()), " ")
	for _, want := range []string{"✗ overlap", "? foreign-release", "first violation: buyer 1 and buyer 2 were both inside the critical section for 52 ms; 1 oversold",
		"? overlap, oversold, foreign-release — not judged: the scenario ran past its deadline of 5s"} {
		if !strings.Contains(v, want) {
			t.Errorf("found and unjudged: the view lacks %q:\n%s", want, m.View())
		}
	}
	m = liveArena(t, 10)
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "? idle") || !strings.Contains(v, "idle is judged only at the end of a run") || strings.Contains(v, "✓ idle") {
		t.Errorf("live idle:\n%s", v)
	}
}

// TestLogStaysInItsPlace: multi-line details become one line, a sale then an error is no failed order, and
// the footer stays on screen (problems 4, 5).
func TestLogStaysInItsPlace(t *testing.T) {
	m := liveArena(t, 2)
	a := m.ar
	for i := 0; i < 20; i++ {
		a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvDone, Buyer: 1, Err: "boom\nline 2\nline 3\n"})
	}
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvDone, Buyer: 2, Sold: true, Err: steps.ErrNotOwner.Error()})
	m.msg = "the scenario failed: panic\ngoroutine 1\nmain.go:1"
	for _, size := range [][2]int{{100, 30}, {80, 24}} {
		m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		v := m.View()
		lines := strings.Split(v, "\n")
		if len(lines) != size[1] || !strings.Contains(lines[len(lines)-1], "q quit") {
			t.Fatalf("%v: %d lines, last %q:\n%s", size, len(lines), lines[len(lines)-1], v)
		}
		if !strings.Contains(v, "buyer 1's order failed: boom; line 2; line 3") {
			t.Errorf("%v: the multi-line detail:\n%s", size, v)
		}
	}
	if l := a.log[len(a.log)-1]; !strings.HasSuffix(l, "buyer 2's order sold; then the lock is not held by this process") {
		t.Errorf("sold, then an error: %q", l)
	}
}

// TestCommandsPerOrderWithoutOrders (problem 6).
func TestCommandsPerOrderWithoutOrders(t *testing.T) {
	m := liveArena(t, 1)
	for i := 0; i < 4; i++ {
		m.ar.apply(referee.Event{At: time.Millisecond, Kind: referee.EvCommand, Buyer: 1, Cmd: &referee.Command{Name: "SET", NX: true, OnLock: true, Label: "SET NX lock", Long: "SET NX lock"}})
	}
	if s := m.ar.shopLine(100); !strings.Contains(s, "4 Redis cmds, no order yet") || strings.Contains(s, "cmds/order") {
		t.Fatalf("no order: %q", s)
	}
	sell(m.ar, 2*time.Millisecond, 1, 100)
	if s := m.ar.shopLine(100); !strings.Contains(s, "4.0 Redis cmds/order") {
		t.Fatalf("one order: %q", s)
	}
}

// TestStuckLive: stuck is judged live by sim, which says it in a sentence; the lab shows that
// sentence as it came, and judges nothing itself (problem 7); step 1 says it takes no lock
// (problem 8).
func TestStuckLive(t *testing.T) {
	m := liveArena(t, 1)
	a := m.ar
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvAcquired, Buyer: 2})
	a.apply(referee.Event{At: 2 * time.Millisecond, Kind: referee.EvDone, Buyer: 2, Err: "boom"})
	a.setLock(lockReading{st: arena.LockState{Held: true, Owner: 2, TTL: -1}, at: 10 * a.timing.TTL})
	if _, bad := a.violated(steps.Stuck); bad {
		t.Fatalf("the lab judged stuck by itself:\n%s", m.View())
	}
	const said = "the lock is still held by buyer 2, whose order has ended, while 100 units are on the shelf: nobody can buy them"
	a.apply(referee.Event{At: 3 * time.Millisecond, Kind: referee.EvViolation, Viol: steps.Stuck, Sentence: said})
	if v := strings.Join(strings.Fields(m.View()), " "); !strings.Contains(v, "✗ stuck") || !strings.Contains(v, "first violation, at 0s: "+said) {
		t.Fatalf("stuck:\n%s", m.View())
	}
	m = liveArena(t, 0)
	if v := m.View(); !strings.Contains(v, "LOCK none — this step takes no lock") {
		t.Fatalf("step 1:\n%s", v)
	}
}

// TestPageDrawsCommandsAsTheTerminal: the page and the terminal mark a command with one glyph
// (picture.Marks): on 09 × contention both draw the unlock script as U and the watchdog's renewal
// as P, where the page once drew every script L.
func TestPageDrawsCommandsAsTheTerminal(t *testing.T) {
	t.Parallel()
	st, err := catalog.Find("09")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := matrix.Play(st, steps.Contention, "", func(f func()) { synctest.Test(t, func(*testing.T) { f() }) })
	if err != nil {
		t.Fatal(err)
	}
	tb := page.NewTables()
	p := page.NewPlay(rep.History, tb)
	onPage := map[string]bool{}
	for _, m := range p.Marks {
		if s := tb.Styles[m.Style]; s[0] == "cmd" || s[0] == "scmd" {
			onPage[s[1]] = true
		}
	}
	a := newArena(steps.Contention, rep.History.Timing, -1, "lock", false, 1)
	ref := referee.NewReferee(*rep.History, a.apply)
	for _, rec := range rep.History.Records {
		ref.Add(rec)
	}
	term := map[string]bool{}
	bs := a.draw(0, a.bucket(a.now))
	for _, l := range a.lanes {
		for _, c := range bs.cells(l.n) {
			for _, m := range c.marks {
				if m != picture.None {
					term[m.Glyph()] = true
				}
			}
		}
	}
	for _, g := range []string{"U", "P", "G", "S"} {
		if !onPage[g] || !term[g] {
			t.Errorf("%s: on the page %v, on the terminal %v; want both", g, onPage[g], term[g])
		}
	}
	for g := range term {
		if g != picture.Publish.Glyph() && g != picture.Fenced.Glyph() && !onPage[g] {
			t.Errorf("the terminal marks a command %s the page does not (page: %v)", g, onPage)
		}
	}
	if onPage["L"] {
		t.Errorf("the page draws an L on 09, whose Lock sends no script: %v", onPage)
	}
	t.Logf("page %v, terminal %v", onPage, term)
}
