package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestTmuxDrive drives the real binary in a real terminal at 80×24: step 5, the arena, m, and then
// keys alone — step 5's par solution, a key at a time — reach foreign-release; all along the
// screen says each buyer's next command in words.
func TestTmuxDrive(t *testing.T) {
	t.Parallel() // a binary of its own, on a tmux server of its own
	needTmux(t)
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: the tmux test builds and runs the binary (and drive mode's grader)")
	}
	bin := buildLab(t)
	l := startTmux(t, bin, "80", "24")
	l.waitFor(15*time.Second, "Step 1/")
	l.send("5")
	l.waitFor(5*time.Second, "Step 5/")
	l.send("Enter")
	l.waitFor(10*time.Second, "▶ live buyers", "m drive")
	l.send("m")
	// the grader is built the first time (go test -c): give it the time a loaded machine takes
	s := l.waitFor(5*time.Minute, "▶ DRIVE", "buyer 1 next: SET lock:product:1001", "buyer 2 next: SET lock:product:1001", "— take the")
	if !strings.Contains(s, "1-9 buyers") {
		t.Errorf("the footer does not say the number keys are buyers:\n%s", s)
	}
	ch, _ := catalog.ChallengeOf("05_owner")
	moves := strings.Fields(ch.Solution)
	for i, k := range moves[:len(moves)-1] {
		l.send(k)
		l.waitFor(20*time.Second, fmt.Sprintf("par 10 · %s", course.Count(i+1, "move", "moves")))
		if i == 4 { // after buyer 1's GET of the lock its DEL waits, and the screen says so
			l.waitFor(5*time.Second, "buyer 1 next: DEL lock:product:1001 — delete the lock", "is the lock still mine?")
		}
	}
	l.send(moves[len(moves)-1])
	s = l.waitFor(20*time.Second, "GOAL REACHED in 10 moves (par 10)", "✗ foreign-release", "buyer 2 next: GET stock — read the stock")
	if !strings.Contains(s, "the fix: step 9") {
		t.Errorf("the fix is not named:\n%s", s)
	}
	l.send("q")
	l.waitFor(15*time.Second, "LAB-EXITED=0")
}
