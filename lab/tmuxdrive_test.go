package main

import (
	"fmt"
	"os"
	"os/exec"
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

// TestTmuxDriveHangUp: a terminal closed under drive mode (a hang-up) ends the lab and its grader,
// as it ends the lab without one: the grader's build catches the stop signals, and drive mode
// must not leave the lab running on a terminal that is gone.
func TestTmuxDriveHangUp(t *testing.T) {
	t.Parallel() // a binary of its own, on a tmux server of its own
	needTmux(t)
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: the tmux test builds and runs the binary (and drive mode's grader)")
	}
	bin := buildLab(t)
	l := startTmux(t, bin, "80", "24", "-step", "05", "-drive")
	l.waitFor(5*time.Minute, "buyer 1 next: SET lock:product:1001")
	sh := strings.TrimSpace(l.tmux("display-message", "-p", "-t", l.name, "#{pane_pid}"))
	lab := children(t, sh)
	if len(lab) != 1 {
		t.Fatalf("the pane's shell %s runs %v, want the lab alone", sh, lab)
	}
	grader := children(t, lab[0])
	if len(grader) == 0 {
		t.Fatalf("the lab %s runs no grader", lab[0])
	}
	l.tmux("kill-server") // the terminal goes: SIGHUP
	deadline := time.Now().Add(20 * time.Second)
	for _, pid := range append(lab, grader...) {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %s outlived its terminal", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// children are the processes whose parent is pid.
func children(t *testing.T, pid string) []string {
	t.Helper()
	out, _ := exec.Command("pgrep", "-P", pid).Output()
	return strings.Fields(string(out))
}

// alive reports whether process pid is still there (and no zombie).
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}
