package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
)

// TestLockLineSaysOneReading: owner and TTL come first and the key last, and every part of the
// line comes from one reading, so it never says "free" beside a value or an owner beside another's.
func TestLockLineSaysOneReading(t *testing.T) {
	m := liveArena(t, 4)
	a := m.ar
	a.lockKey = "lockstep:1a860bde:lock:product:1001"
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvAcquired, Buyer: 5}) // the picture moved on
	a.setLock(lockReading{st: arena.LockState{Held: true, Value: "eeffe9b7bbd03aa1", TTL: 1850 * time.Millisecond, Owner: 3}, at: time.Millisecond})
	l := a.lockLine(80)
	if !strings.HasPrefix(l, "LOCK owner buyer 3 · TTL 1.85s left · value \"eeffe9b7bbd03…\" · key lockstep:") || ansi.StringWidth(l) > 80 {
		t.Errorf("held: %q", l)
	}
	a.setLock(lockReading{st: arena.LockState{Held: false, Owner: 3}, at: 2 * time.Millisecond})
	if l := a.lockLine(100); !strings.Contains(l, "free: buyer 3's lock expired in Redis, and buyer 3 does not know yet") || strings.Contains(l, "value") {
		t.Errorf("expired: %q", l)
	}
	a.setLock(lockReading{st: arena.LockState{Held: true, Value: "old", TTL: time.Second, Owner: 2}, at: time.Millisecond})
	if l := a.lockLine(100); strings.Contains(l, "old") {
		t.Errorf("an older reading replaced a newer one: %q", l)
	}
	a.setLock(lockReading{st: arena.LockState{}, at: 3 * time.Millisecond})
	if l := a.lockLine(100); !strings.HasPrefix(l, "LOCK free · key") {
		t.Errorf("free: %q", l)
	}
	a.setLock(lockReading{st: arena.LockState{Held: true, Value: "buyer-4", TTL: -1, Owner: 4}, at: 4 * time.Millisecond})
	if l := a.lockLine(100); !strings.HasPrefix(l, "LOCK owner buyer 4 · no TTL: held until deleted") {
		t.Errorf("no TTL: %q", l)
	}
	// An older reading never replaces a newer one.
	a.setLock(lockReading{st: arena.LockState{}, at: 2 * time.Millisecond})
	if l := a.lockLine(100); !strings.HasPrefix(l, "LOCK owner buyer 4 ·") {
		t.Errorf("an older reading: %q", l)
	}
}

// TestLockLaneNumbersAreWhole: past 9 buyers the lock lane writes the owner's whole number at the
// start of each hold, never its last digit.
func TestLockLaneNumbersAreWhole(t *testing.T) {
	a := newArena("", history.DefaultTiming(), 10, "k", true, 1)
	at := func(b int) time.Duration { return time.Duration(b) * a.res }
	for _, h := range []struct{ b, n int }{{0, 12}, {5, 3}, {9, 10}} {
		a.apply(referee.Event{At: at(h.b), Kind: referee.EvAcquired, Buyer: h.n})
	}
	a.apply(referee.Event{At: at(14), Kind: referee.EvReleased, Buyer: 10})
	a.advance(at(16))
	tl := timeline{a: a}
	tl.SetSize(40, 12)
	lock := tl.View()[1]
	if !strings.HasPrefix(lock, "lock  12═══3═══10════──") {
		t.Errorf("lock lane %q", lock)
	}
	// holds one column long, one after another: 8, 1, 5 must not read as buyer 815
	for _, h := range []struct{ b, n int }{{17, 8}, {18, 1}, {19, 5}} {
		a.apply(referee.Event{At: at(h.b), Kind: referee.EvAcquired, Buyer: h.n})
	}
	a.apply(referee.Event{At: at(20), Kind: referee.EvReleased, Buyer: 5})
	a.advance(at(22))
	if lock := tl.View()[1]; !strings.Contains(lock, "──8═5═──") {
		t.Errorf("short holds in a row: %q", lock)
	}
}

// TestNamedBuyersAreShown: when not every lane fits, the buyers the verdict names are drawn and
// the rest are listed, not the first lanes in order.
func TestNamedBuyersAreShown(t *testing.T) {
	a := newArena(steps.Contention, history.DefaultTiming(), -1, "k", true, 1)
	for n := 1; n <= 8; n++ {
		a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvStart, Buyer: n})
		a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvDone, Buyer: n, Err: steps.ErrBusy.Error()})
	}
	tl := timeline{a: a, keep: []int{8, 6, 7}}
	tl.SetSize(80, 4)
	v := strings.Join(tl.View(), "\n")
	for _, want := range []string{"\nb6 ", "\nb7 ", "\nb8 ", "5 more buyers not shown (a taller terminal shows them): b1 b2 b3 b4 b5"} {
		if !strings.Contains(v, want) {
			t.Errorf("lacks %q:\n%s", want, v)
		}
	}
}

// TestFinalMarksStayOnScreen: the last marks of a finished run (the slow scenario's final DEL)
// spill into columns kept free for them at the right edge, at every width.
func TestFinalMarksStayOnScreen(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	loadRecorded(t, m)
	for _, w := range []int{60, 80, 100, 160} {
		tl := timeline{a: m.ar}
		tl.SetSize(w, 5)
		for _, l := range tl.View()[2:4] {
			if !strings.Contains(l, "SD") {
				t.Errorf("at %d columns a lane lost its final S D: %q", w, l)
			}
		}
	}
}

// TestHelpPagesAt80x24: PgDn moves a page, not a line, and the Faults section is reachable.
func TestHelpPagesAt80x24(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	press(m, "?")
	first := m.View()
	press(m, "pgdown")
	if got := m.helpP.vp.YOffset; got < 15 {
		t.Fatalf("pgdn scrolled %d lines", got)
	}
	for i := 0; i < 5 && !strings.Contains(m.View(), "Faults hit the current holder"); i++ {
		press(m, "pgdown")
	}
	if v := m.View(); !strings.Contains(v, "Faults hit the current holder") || v == first {
		t.Fatalf("the Faults section is not reachable:\n%s", v)
	}
	press(m, "esc", "?")
	if m.helpP.vp.YOffset != 0 {
		t.Fatal("help opens where it was left, not at the top")
	}
}

// TestHeaderSaysThePaceOneWay: the speed label depends on the width alone, not on the buyers or
// on what runs.
func TestHeaderSaysThePaceOneWay(t *testing.T) {
	for _, w := range []int{80, 100, 160} {
		m := liveArena(t, 3)
		m.Update(tea.WindowSizeMsg{Width: w, Height: 30})
		seen := map[bool]bool{}
		for _, buyers := range []int{1, 9, 10, 50} {
			m.buyers = buyers
			seen[strings.Contains(m.header(w), "slower")] = true
		}
		m.ar = newArena(steps.Slow, m.timing(), -1, "k", true, 1)
		seen[strings.Contains(m.header(w), "slower")] = true
		if len(seen) != 1 {
			t.Errorf("at %d columns the header says the pace both ways", w)
		}
	}
	m := liveArena(t, 3)
	m.buyers = 1
	if h := m.header(160); !strings.Contains(h, "· 1 buyer") || strings.Contains(h, "1 buyers") {
		t.Errorf("one buyer: %q", h)
	}
}

// TestStepOneCannotFailOver: f and i on a step that takes no lock say so and arm nothing.
func TestStepOneCannotFailOver(t *testing.T) {
	m := liveArena(t, 0)
	press(m, "f")
	if m.ar.armed != "" || !strings.Contains(m.msg, "takes no lock") || strings.Contains(m.View(), "armed:") {
		t.Fatalf("f on step 1: armed %q, msg %q", m.ar.armed, m.msg)
	}
	press(m, "i")
	if !strings.Contains(m.msg, "partition: this step takes no lock") {
		t.Fatalf("i on step 1: msg %q", m.msg)
	}
}

// TestArmedKeyOnTheTopology: a key whose move waits for a lock write (the failover's) puts its
// scenario's Armed words on the topology line, and the failover it waited for takes them off.
func TestArmedKeyOnTheTopology(t *testing.T) {
	m := liveArena(t, 8) // 09_lua_unlock
	if !m.ar.canFail {
		t.Fatal("the embedded backend has no replica: no failover to arm")
	}
	m.injected(injectMsg{gen: m.gen, sc: scenario.Failover})
	if want := scenario.Failover.Armed; want == "" || !strings.Contains(m.ar.topoLine(), want) {
		t.Fatalf("f armed: the topology says %q, want %q in it", m.ar.topoLine(), want)
	}
	m.ar.apply(referee.Event{Kind: referee.EvFailover, OK: true})
	if l := m.ar.topoLine(); strings.Contains(l, "armed") || !strings.Contains(l, "A died") {
		t.Fatalf("failed over: the topology says %q", l)
	}
}

// TestNewFaultKeys: the partition and second-request keys are in the live footer and in help,
// at 80 columns too, and their answers say what happened to whom.
func TestNewFaultKeys(t *testing.T) {
	m := liveArena(t, 10)
	for _, w := range []int{80, 100, 160} {
		m.Update(tea.WindowSizeMsg{Width: w, Height: 30})
		foot := strings.Join(m.arenaP.footer(w), "\n")
		for _, want := range []string{"i partition", "t 2nd req", "x crash", "q quit"} {
			if !strings.Contains(foot, want) {
				t.Errorf("at %d columns the footer lacks %q:\n%s", w, want, foot)
			}
		}
		if n := strings.Count(foot, "\n") + 1; n > 3 {
			t.Errorf("at %d columns the footer takes %d lines:\n%s", w, n, foot)
		}
	}
	press(m, "t")
	if !strings.Contains(m.msg, "no live buyers now") {
		t.Errorf("t offline: %q", m.msg)
	}
	help := strings.Join(strings.Fields(strings.Join(m.helpP.lines(100), " ")), " ")
	for _, want := range []string{"i partition", "t 2nd request", "partition: inside its work", "2nd request: its process starts a second order"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for f, want := range map[*scenario.Scenario]string{
		scenario.Partition:   "partition → buyer 3: inside its work, its link to the lock server is cut",
		scenario.TwoRequests: "two-requests → buyer 3: its process starts a second order now",
	} {
		if got := injectAnswer(injectMsg{sc: f, who: 3}, false, "i"); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q", f.Name, got)
		}
	}
}

// TestEscEnterForgetsTheOldStatus: leaving the arena and coming back does not show the last
// break's status again.
func TestEscEnterForgetsTheOldStatus(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	loadRecorded(t, m)
	if !strings.Contains(m.View(), "step 4 broke under slow") {
		t.Fatal("no status after the break")
	}
	press(m, "esc", "enter")
	if v := m.View(); strings.Contains(v, "broke under") || m.handoff != nil {
		t.Fatalf("esc enter:\n%s", v)
	}
}

// TestCodeCommentsWrapAsComments: a long comment's continuation is a comment, at the pane's width.
func TestCodeCommentsWrapAsComments(t *testing.T) {
	line := "    // Locker takes the lock with one SET NX PX holding a random owner token, and deletes it only if"
	got := wrapCode(line, 60)
	if len(got) != 2 || !strings.HasPrefix(got[1], "    // ") || ansi.StringWidth(got[0]) > 60 {
		t.Fatalf("%q", got)
	}
	if got := wrapCode(line, 120); len(got) != 1 {
		t.Fatalf("wrapped at 120: %q", got)
	}
	m := newModel(Options{offline: true})
	defer m.shutdown()
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	press(m, "5", "tab")
	if v := m.View(); strings.Contains(v, "↪") {
		t.Errorf("step 5's code wraps at 160 columns:\n%s", v)
	}
}

// TestRetiredBuyersAreNamedSo: after - the LOCK line and the lane say a retired buyer is retired.
func TestRetiredBuyersAreNamedSo(t *testing.T) {
	m := liveArena(t, 4)
	a := m.ar
	a.roster.sync([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	a.roster.sync([]int{1})
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvAcquired, Buyer: 12})
	a.setLock(lockReading{st: arena.LockState{Held: true, Value: "t", TTL: time.Second, Owner: 12}, at: time.Millisecond})
	if l := a.lockLine(100); !strings.Contains(l, "owner buyer 12 (retired)") {
		t.Errorf("%q", l)
	}
	if a.roster.retired[1] || !a.roster.retired[2] || fmt.Sprint(a.roster.active) != "[1]" {
		t.Errorf("roster %+v", a.roster)
	}
}

// TestLatestViolationIsNotCut: at 80 columns the latest violation's sentence wraps to its end.
func TestLatestViolationIsNotCut(t *testing.T) {
	m := liveArena(t, 2)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	a := m.ar
	a.apply(referee.Event{At: time.Millisecond, Kind: referee.EvViolation, Viol: steps.LostSales, Sentence: "buyer 2 was turned away while 100 units were on the shelf"})
	a.apply(referee.Event{At: 2 * time.Millisecond, Kind: referee.EvViolation, Viol: steps.Stuck,
		Sentence: "the lock is still held by buyer 4, whose process crashed, while 91 units remain: nobody can buy them"})
	if v := m.View(); !strings.Contains(v, "nobody can buy them") {
		t.Fatalf("the latest violation is cut:\n%s", v)
	}
}

// TestFaultThenWhatCameOfIt: after a fault hit a buyer, the first thing that came of it is added
// to the status line in the referee's words (its overlap), or, for a second request, that the
// second order waits; another message in between stops it.
func TestFaultThenWhatCameOfIt(t *testing.T) {
	m := liveArena(t, 9)
	m.injected(injectMsg{gen: m.gen, sc: scenario.TwoRequests, who: 3})
	said := m.msg
	m.follow(referee.Event{Kind: referee.EvOverlap, Buyer: 2, Other: 1, Sentence: "buyer 1 and buyer 2 were both inside"})
	if m.msg != said {
		t.Fatalf("another pair's overlap: %q", m.msg)
	}
	const ov = "two orders of buyer 3 were both inside the critical section for 41 ms"
	m.follow(referee.Event{Kind: referee.EvOverlap, Buyer: 3, Other: 3, Sentence: ov})
	if m.msg != said+"; then: "+ov || m.after != nil {
		t.Fatalf("then: %q", m.msg)
	}
	// the second order's start reaches the picture before the key's answer does
	m.ar.apply(referee.Event{Kind: referee.EvStart, Buyer: 3, Order: 6})
	m.ar.apply(referee.Event{Kind: referee.EvEnter, Buyer: 3, Order: 6, Granted: true})
	m.ar.apply(referee.Event{Kind: referee.EvStart, Buyer: 3, Order: 7})
	m.injected(injectMsg{gen: m.gen, sc: scenario.TwoRequests, who: 3})
	for _, e := range []referee.Event{{Kind: referee.EvStart, Buyer: 3, Order: 8}, {Kind: referee.EvDone, Buyer: 3, Order: 8, Sold: true}, {Kind: referee.EvExit, Buyer: 3, Order: 6}, {Kind: referee.EvDone, Buyer: 3, Order: 6, Sold: true},
		{Kind: referee.EvEnter, Buyer: 3, Order: 7, Granted: true}} {
		m.ar.apply(e)
		m.follow(e)
	}
	if !strings.HasSuffix(m.msg, "then: buyer 3's second order waited its turn: it went in only once its other order had returned") {
		t.Fatalf("waits: %q", m.msg)
	}
	m.injected(injectMsg{gen: m.gen, sc: scenario.Partition, who: 1})
	m.msg = "orders resumed"
	m.follow(referee.Event{Kind: referee.EvOverlap, Buyer: 2, Other: 1, Sentence: "buyer 1 and buyer 2 were both inside"})
	if m.msg != "orders resumed" {
		t.Fatalf("a newer message was overwritten: %q", m.msg)
	}
}
