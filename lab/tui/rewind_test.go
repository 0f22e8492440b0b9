package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// flat is the view with its runs of blanks made one, so a wrapped sentence reads as one.
func flat(m *model) string { return strings.Join(strings.Fields(m.View()), " ") }

// TestRewindWalksTheRecordedRun walks step 04's recorded slow run: , puts the cursor on the last
// event, home on the first, . on event by event; each says what happened, the referee's
// sentences word for word, the timeline marks the cursor, and space leaves rewind.
func TestRewindWalksTheRecordedRun(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	loadRecorded(t, m)
	n := len(m.ar.hist.s)
	if strings.Contains(m.View(), "◀▶") || strings.Contains(m.View(), "▼") {
		t.Fatalf("a cursor before any rewind key:\n%s", m.View())
	}
	press(m, ",")
	if v := flat(m); !strings.Contains(v, "◀▶ 31/31") || !strings.Contains(v, "buyer 2's order returned: sold") || n != 31 {
		t.Fatalf(", after the run: want the last of %d events:\n%s", n, m.View())
	}
	press(m, "home")
	v := m.View()
	if !strings.Contains(v, "◀▶ 1/31 0.00s buyer 1 starts order 1") || !strings.Contains(v, "▼") {
		t.Fatalf("home:\n%s", v)
	}
	if press(m, ","); !strings.Contains(m.msg, "first event") {
		t.Errorf(", on the first event: %q", m.msg)
	}
	want := []string{
		"2/31 0.00s buyer 1 sends SET NX lock; the lock is free",
		"3/31 0.00s buyer 1: SET NX lock → OK, the lock is buyer 1's, TTL 0.2s",
	}
	for _, w := range want {
		press(m, ".")
		if v := flat(m); !strings.Contains(v, w) {
			t.Fatalf("want %q:\n%s", w, m.View())
		}
	}
	if v := flat(m); !strings.Contains(v, "LOCK at the cursor: owner buyer 1 · TTL ≈0.20s left") {
		t.Errorf("the LOCK line at the cursor:\n%s", m.View())
	}
	// on to the referee's sentences, word for word
	for _, w := range []string{"overlap: buyer 1 and buyer 2 were both inside the critical section for 20 ms",
		"VIOLATION overlap: buyer 1 and buyer 2 were both inside the critical section for 20 ms",
		"buyer 1 sends DEL lock; the lock is buyer 2's",
		"buyer 1 deletes the lock that buyer 2 held",
		"VIOLATION foreign-release: buyer 1 deleted the lock that buyer 2 held"} {
		for i := 0; i < n && !strings.Contains(flat(m), w); i++ {
			press(m, ".")
		}
		if !strings.Contains(flat(m), w) {
			t.Fatalf("walking on never says %q", w)
		}
	}
	press(m, "end")
	if press(m, "."); !strings.Contains(m.msg, "latest event") || !strings.Contains(flat(m), "31/31") {
		t.Errorf(". on the last event: %q\n%s", m.msg, m.View())
	}
	press(m, " ")
	if v := m.View(); strings.Contains(v, "◀▶") || strings.Contains(v, "▼") || !strings.Contains(v, "Step 4 broke") {
		t.Errorf("space leaves rewind, and the lesson comes back:\n%s", v)
	}
}

// TestRewindWaitsForHeldOrders: live buyers are rewound only while held; a scenario only once it
// has finished.
func TestRewindWaitsForHeldOrders(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	m.scr = scrArena
	m.ar = newArena("", history.DefaultTiming(), 10, "k", true, 1)
	m.ar.apply(referee.Event{At: time.Millisecond, Kind: referee.EvStart, Buyer: 1, Order: 1})
	press(m, ",")
	if m.ar.rw != nil || !strings.Contains(m.msg, "hold the orders first (space)") {
		t.Fatalf("live, not held: %q", m.msg)
	}
	m.paused = true
	press(m, ",")
	if m.ar.rw == nil || !strings.Contains(m.View(), "buyer 1 starts order 1") || !strings.Contains(m.View(), ",/. rewind") {
		t.Fatalf("live, held:\n%s", m.View())
	}
	m.ar = newArena(steps.Slow, history.DefaultTiming(), -1, "k", true, 1)
	m.ar.apply(referee.Event{At: time.Millisecond, Kind: referee.EvStart, Buyer: 1, Order: 1})
	press(m, ".")
	if m.ar.rw != nil || !strings.Contains(m.msg, "once the scenario has finished") {
		t.Fatalf("a scenario under way: %q", m.msg)
	}
}

// quorumRun is step 15's restart as sim tells it: buyer 1 takes lock-1 and lock-2 (it missed
// lock-3), lock-1 restarts and forgets, buyer 2 takes lock-1 and lock-3.
var quorumRun = []referee.Event{
	{At: 1 * time.Millisecond, Kind: referee.EvCommand, Buyer: 1, Cmd: &referee.Command{Name: "EVAL", OnLock: true, Node: 0, Label: "EVAL lock @1", Long: "EVAL lock on lock-1"}},
	{At: 2 * time.Millisecond, Kind: referee.EvCommand, Buyer: 1, Cmd: &referee.Command{Name: "EVAL", OnLock: true, Node: 1, Label: "EVAL lock @2", Long: "EVAL lock on lock-2"}},
	{At: 3 * time.Millisecond, Kind: referee.EvAcquired, Buyer: 1, Node: 0, On: "lock-1"},
	{At: 4 * time.Millisecond, Kind: referee.EvAcquired, Buyer: 1, Node: 1, On: "lock-2"},
	{At: 40 * time.Millisecond, Kind: referee.EvRestart, Node: 0, OK: true},
	{At: 40 * time.Millisecond, Kind: referee.EvLost, Other: 1, Node: 0, On: "lock-1"},
	{At: 50 * time.Millisecond, Kind: referee.EvCommand, Buyer: 2, Cmd: &referee.Command{Name: "EVAL", OnLock: true, Node: 0, Label: "EVAL lock @1", Long: "EVAL lock on lock-1"}},
	{At: 51 * time.Millisecond, Kind: referee.EvAcquired, Buyer: 2, Node: 0, On: "lock-1"},
	{At: 52 * time.Millisecond, Kind: referee.EvCommand, Buyer: 2, Cmd: &referee.Command{Name: "EVAL", OnLock: true, Node: 2, Label: "EVAL lock @3", Long: "EVAL lock on lock-3"}},
	{At: 53 * time.Millisecond, Kind: referee.EvAcquired, Buyer: 2, Node: 2, On: "lock-3"},
}

// TestQuorumNodes: a quorum lock's owner is the majority's; its LOCK line and one line per node
// say who holds it where, and rewind shows the second majority form.
func TestQuorumNodes(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "15")
	m.scr = scrArena
	m.ar = newArena(steps.Restart, history.DefaultTiming(), -1, "k", true, 3)
	owners := []int{0, 0, 0, 1, 1, 0, 0, 0, 0, 2}
	for i, e := range quorumRun {
		m.ar.apply(e)
		if m.ar.owner != owners[i] {
			t.Fatalf("after %v the owner is %d, want %d", e, m.ar.owner, owners[i])
		}
	}
	m.ar.finish(&referee.Report{Scenario: "restart", InitialStock: 3, FinalStock: 2, Confirmed: 2}, nil)
	v := flat(m)
	for _, w := range []string{"LOCK owner buyer 2 · a majority: 2 of 3 nodes", "lock-1 buyer 2 · TTL ≈",
		"restarted without persistence: it forgot its keys", "lock-2 buyer 1 · TTL ≈", "lock-3 buyer 2 · TTL ≈", "R?"} {
		if !strings.Contains(v, w) {
			t.Errorf("the view lacks %q:\n%s", w, m.View())
		}
	}
	press(m, "home", ".", ".", ".")
	if v := flat(m); !strings.Contains(v, "buyer 1: EVAL lock on lock-2 → OK, the lock on lock-2 is buyer 1's, TTL 0.2s; buyer 1 holds 2 of 3 nodes: a majority") ||
		!strings.Contains(v, "lock-3 free") {
		t.Errorf("buyer 1's majority:\n%s", m.View())
	}
	press(m, ".", ".")
	if v := flat(m); !strings.Contains(v, "buyer 1's lock on lock-1 is lost: the node forgot it; nobody holds a majority") ||
		!strings.Contains(v, "LOCK no majority: nobody holds 2 of the 3 nodes") {
		t.Errorf("the restart:\n%s", m.View())
	}
	press(m, "end")
	if v := flat(m); !strings.Contains(v, "buyer 2: EVAL lock on lock-3 → OK, the lock on lock-3 is buyer 2's, TTL 0.2s; buyer 2 holds 2 of 3 nodes: a majority") {
		t.Errorf("the second majority:\n%s", m.View())
	}
}

// TestFencedWriteIsSaid: a write the inventory refused is said on the SHOP line, and once the run
// is over on the LOCK line, in the referee's words.
func TestFencedWriteIsSaid(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "16")
	m.scr = scrArena
	m.ar = newArena(steps.Pause, history.DefaultTiming(), -1, "k", true, 1)
	m.ar.apply(referee.Event{At: time.Millisecond, Kind: referee.EvFenced, Buyer: 1, Token: 1, Write: true})
	m.ar.finish(&referee.Report{Scenario: "pause", InitialStock: 3, FinalStock: 2, Confirmed: 1}, nil)
	v := flat(m)
	if !strings.Contains(v, "1 stale write refused (token too low)") || !strings.Contains(v, "LOCK stale write refused at the inventory: buyer 1's token 1 < the highest seen") {
		t.Errorf("a fenced write:\n%s", m.View())
	}
}

// TestStep17CannotBeBroken: b on a step whose row is clear says so, and why, from the catalog.
func TestStep17CannotBeBroken(t *testing.T) {
	m := newModel(Options{offline: true})
	defer m.shutdown()
	press(m, "17", "b")
	st, _ := catalog.Find("17")
	want := "Step 17 cannot be broken: every scenario passes (its row of the matrix is all ✓) — it takes no lock: " +
		strings.ToLower(st.Fixes[:1]) + st.Fixes[1:]
	if m.msg != want || !strings.Contains(flat(m), "Step 17 cannot be broken") {
		t.Errorf("b on 17: %q\n%s", m.msg, m.View())
	}
}

// TestGoldenArenaRewind80x24 is step 04's recorded run at 80×24, rewound to its overlap.
func TestGoldenArenaRewind80x24(t *testing.T) {
	m := newModel(Options{offline: true})
	loadRecorded(t, m)
	at := -1 // the overlap's event
	for i, s := range m.ar.hist.s {
		if s.ev.Kind == referee.EvOverlap {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("the recorded run has no overlap")
	}
	keys := []string{"home"}
	for range at {
		keys = append(keys, ".")
	}
	v := runTea(t, m, 80, 24, fmt.Sprintf("%d/%d", at+1, len(m.ar.hist.s)), append([]string{","}, keys...)...)
	golden.RequireEqual(t, []byte(v))
}
