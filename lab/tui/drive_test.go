package tui

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// driving is the lab offline, with drive mode's sessions played in this test's bubbles (the
// grader's TestDrive does the same in the lab).
func driving(t *testing.T) *model {
	t.Helper()
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	return newModel(Options{offline: true, Driver: func() (*drive.Driver, error) {
		return drive.Local(catalog.Find, bubble, synctest.Wait), nil
	}})
}

// TestGoldenDrive80x24: at 80×24, step 5, the arena, m, and then keys alone — the challenge's par
// solution typed as a learner types it — reach foreign-release: the goal is reached in par and
// the fix named, and each buyer's next command is on the screen in words.
func TestGoldenDrive80x24(t *testing.T) {
	ch, _ := catalog.ChallengeOf("05_owner")
	keys := append([]string{"5", "enter", "m"}, strings.Fields(ch.Solution)...)
	v := runTea(t, driving(t), 80, 24, "GOAL REACHED", keys...)
	for _, want := range []string{"✓ GOAL REACHED in 10 moves (par 10)", "the fix: step 9", "✗ foreign-release",
		"buyer 2 next: GET stock — read the stock", "buyer 1: done", "10. buyer 1 sends DEL lock:product:1001 — delete the lock"} {
		if !strings.Contains(v, want) {
			t.Errorf("the screen lacks %q:\n%s", want, v)
		}
	}
	golden.RequireEqual(t, []byte(v))
}

// TestDriveUndoAndHint: backspace takes the last move back (the session played again from its
// start), and h says the par solution's next move from where the learner is; a buyer with nothing
// to send says so, and the move is not played.
func TestDriveUndoAndHint(t *testing.T) {
	fm, v := runTeaModel(t, driving(t), 100, 30, "hint: next, w", "5", "enter", "m", "1", "1", "w", "backspace", "h")
	if n := len(fm.drv.f.Moves); n != 2 || !strings.Contains(v, "par 10 · 2") {
		t.Fatalf("after 1 1 w and an undo: %d moves\n%s", n, v)
	}
	_, v = runTeaModel(t, driving(t), 100, 30, "has nothing to send", "5", "enter", "m", "1", "1", "1")
	if !strings.Contains(v, "buyer 1 has nothing to send: at its work") || !strings.Contains(v, "par 10 · 2") {
		t.Fatalf("a third 1 while buyer 1 works:\n%s", v)
	}
}

// TestDriveEndJudges: enter ends the session and the referee judges it to the end: step 2's par
// solution leaves a lock nobody will free, found by the end-of-run probe.
func TestDriveEndJudges(t *testing.T) {
	m := driving(t)
	_, v := runTeaModel(t, m, 100, 30, "found as the session ended", "2", "enter", "m", "1", "1", "e", "enter")
	if !strings.Contains(v, "✗ stuck") || !strings.Contains(v, "GOAL REACHED in 3 moves (par 3)") {
		t.Fatalf("after 1 1 e and enter:\n%s", v)
	}
}

// TestDriveTellsTheRoom: a challenge reached is told to the room (lab serve's Watch) with its
// moves and par, once; again only in fewer moves.
func TestDriveTellsTheRoom(t *testing.T) {
	ch, _ := catalog.ChallengeOf("05_owner")
	keys := append([]string{"5", "enter", "m"}, strings.Fields(ch.Solution)...)
	fm, _ := runTeaModel(t, driving(t), 100, 30, "GOAL REACHED", keys...)
	var told []Activity
	w := watcher{tell: func(a Activity) { told = append(told, a) }, broke: map[string]bool{}, best: map[string]int{}}
	solved := func() (n []int) {
		w.watch(fm, false)
		for _, a := range told {
			if a.Solved > 0 {
				if a.Step != "05_owner" || a.Par != ch.Par() {
					t.Errorf("told %+v", a)
				}
				n = append(n, a.Solved)
			}
		}
		return n
	}
	if got := solved(); len(got) != 1 || got[0] != 10 {
		t.Fatalf("reached in 10: told %v", got)
	}
	if got := solved(); len(got) != 1 {
		t.Fatalf("told again with nothing new: %v", got)
	}
	fm.drv.reached = 12
	if got := solved(); len(got) != 1 {
		t.Fatalf("told a worse solution: %v", got)
	}
	fm.drv.reached = 9
	if got := solved(); len(got) != 2 || got[1] != 9 {
		t.Fatalf("a better solution: told %v", got)
	}
}
