package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestDriveSolvesEveryChallenge: lab drive STEP -solve plays every step's par solution, says each
// move in words, and reaches the challenge's goal (exit 0), saying in how many moves against the
// par and which step fixes it; 17's cannot be reached (exit 1, "this step holds").
func TestDriveSolvesEveryChallenge(t *testing.T) {
	inVirtualTime(t)
	for _, st := range catalog.Steps {
		ch, ok := catalog.ChallengeOf(st.Slug)
		if !ok {
			continue
		}
		var out, errw bytes.Buffer
		err := run([]string{"drive", st.Slug, "-solve"}, &out, &errw)
		text := out.String()
		moves, _ := drive.Parse(ch.Solution)
		for i := range moves {
			if !strings.Contains(text, "\n"+pad3(i+1)+". ") {
				t.Errorf("%s: move %d is not said:\n%s", st.Slug, i+1, text)
			}
		}
		switch {
		case ch.Holds:
			if err == nil || exitCode(err) != 1 || !strings.Contains(text, "this step holds") {
				t.Errorf("%s: exit %d (%v), want 1 and \"this step holds\":\n%s", st.Slug, exitCode(err), err, text)
			}
		case err != nil:
			t.Errorf("%s: %v\n%s%s", st.Slug, err, text, errw.String())
		case !strings.Contains(text, "goal reached in ") || !strings.Contains(text, "(par "):
			t.Errorf("%s: no goal reached:\n%s", st.Slug, text)
		}
	}
}

// pad3 is n as printMove numbers a move.
func pad3(n int) string { return fmt.Sprintf("%3d", n) }

// TestDriveBadMoves: an unknown key is one line and exit 2, before anything is played; a move a
// session cannot play (a buyer with nothing to send, a buyer not on the stage) is one line each,
// the rest is played (a bad last move too), and the exit is 2.
func TestDriveBadMoves(t *testing.T) {
	inVirtualTime(t)
	var out, errw bytes.Buffer
	err := run([]string{"drive", "05", "-moves", "1 q 2"}, &out, &errw)
	if !errors.Is(err, errUsage) || strings.Contains(unwrapUsage(err), "\n") || !strings.Contains(unwrapUsage(err), `"q"`) {
		t.Fatalf("an unknown key: %v", err)
	}
	out.Reset()
	errw.Reset()
	err = run([]string{"drive", "01", "-moves", "1 1 7 2"}, &out, &errw)
	if !errors.Is(err, errUsage) {
		t.Fatalf("bad moves: want exit 2, got %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(errw.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "move 2") || !strings.Contains(lines[0], "buyer 1 has nothing to send") ||
		!strings.Contains(lines[1], "move 3") || !strings.Contains(lines[1], "no buyer 7") {
		t.Fatalf("want one line for each bad move, got:\n%s", errw.String())
	}
	if !strings.Contains(out.String(), "buyer 2 sends GET stock") {
		t.Fatalf("the moves after a bad one are played:\n%s", out.String())
	}
	// A bad last move: the session ends on the last move played (it dereferenced the bad one's
	// missing frame and panicked).
	out.Reset()
	errw.Reset()
	err = run([]string{"drive", "01", "-moves", "1 1"}, &out, &errw)
	if !errors.Is(err, errUsage) || !strings.Contains(errw.String(), "move 2") || !strings.Contains(out.String(), "verdict") {
		t.Fatalf("a bad last move: want exit 2, one line and the verdict, got %v\n%s\n%s", err, out.String(), errw.String())
	}
	for _, args := range [][]string{{"drive"}, {"drive", "99", "-solve"}, {"drive", "05"}, {"drive", "05", "-solve", "-moves", "1"}} {
		if err := run(args, &out, &errw); !errors.Is(err, errUsage) || strings.Contains(unwrapUsage(err), "\n") {
			t.Errorf("%v: want one line of bad input, got %v", args, err)
		}
	}
}

// TestDriveSaveIsARun: lab drive -save keeps the session as a run lab judge judges again to the
// same verdict, and lab -program opens it with its moves in words; -html writes its page, which
// lab judge reads too.
func TestDriveSaveIsARun(t *testing.T) {
	inVirtualTime(t)
	dir := t.TempDir()
	file, page := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.html")
	var out, errw bytes.Buffer
	if err := run([]string{"drive", "05", "-solve", "-save", file, "-html", page}, &out, &errw); err != nil {
		t.Fatal(err, errw.String())
	}
	for _, f := range []string{file, page} {
		out.Reset()
		if err := run([]string{"judge", f}, &out, &errw); err != nil {
			t.Fatalf("judge %s: %v\n%s", f, err, out.String())
		}
		if !strings.Contains(out.String(), "✗ foreign-release") || !strings.Contains(out.String(), "1 as when played") {
			t.Fatalf("judge %s:\n%s", f, out.String())
		}
	}
	p, err := loadProgram(file, catalog.Steps)
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := catalog.ChallengeOf("05_owner")
	if p.Step.Slug != "05_owner" || len(p.Story) != 1+ch.Par() || !strings.Contains(p.Story[0], ch.Solution) ||
		!slices.ContainsFunc(p.Story, func(s string) bool { return strings.Contains(s, "is the lock still mine?") }) {
		t.Fatalf("lab -program reads the session as %q", p.Story)
	}
	if b, _ := os.ReadFile(page); !bytes.Contains(b, []byte("is the lock still mine?")) {
		t.Fatal("the page does not say the moves")
	}
}

// TestDriveIdleInTheGrader: in the grader the lab runs (TestDrive, its moves on stdin), a drive
// session of step 12 left idle between two moves — buyer 1 holding the lock, its lease guard
// armed — and then played on is the same history, and the same verdict, as one played without the
// wait: the bubble's clock stood still while its goroutine waited for the next line. The wait is
// a second of the wall clock; LOCKSTEP_IDLE=60s waits a minute.
func TestDriveIdleInTheGrader(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the grader")
	}
	idle := time.Second
	if s := os.Getenv("LOCKSTEP_IDLE"); s != "" {
		var err error
		if idle, err = time.ParseDuration(s); err != nil {
			t.Fatal(err)
		}
	}
	pl, err := newPlayer("embedded", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.close()
	if pl.gr == nil {
		t.Fatal("no grader: the test plays in the grader the lab builds")
	}
	ch, _ := catalog.ChallengeOf("12_lease_guard")
	moves, _ := drive.Parse(ch.Solution)
	play := func(wait time.Duration) *referee.Report {
		d, err := openDriver(pl)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if _, err := d.Open(drive.Opening{Step: "12_lease_guard", Moves: moves[:4]}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		for _, m := range moves[4:] {
			if _, err := d.Move(m); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := d.End()
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	waited, straight := play(idle), play(0)
	if !slices.Equal(waited.Violations, straight.Violations) || !slices.Contains(waited.Violations, ch.Goal) {
		t.Fatalf("verdict after waiting %s: %v; without: %v", idle, waited.Violations, straight.Violations)
	}
	if a, b := steptest.Canonical(t, waited.History), steptest.Canonical(t, straight.History); a != b {
		t.Fatalf("waiting %s changed the history:\n%s", idle, steptest.FirstDiff(a, b))
	}
	t.Logf("idle %s: %v, %d records, the same as without the wait", idle, waited.Violations, len(waited.History.Records))
}

// TestDocsListEveryChallenge: the handout lists every step's challenge with its par, as the
// catalog keeps it, and the curriculum shows each step's lab drive command.
func TestDocsListEveryChallenge(t *testing.T) {
	handout, err := os.ReadFile(filepath.Join("..", "docs", "handout.md"))
	if err != nil {
		t.Fatal(err)
	}
	curriculum, err := os.ReadFile(filepath.Join("..", "docs", "curriculum.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range catalog.Steps {
		ch, ok := catalog.ChallengeOf(st.Slug)
		if !ok {
			t.Errorf("%s has no challenge", st.Slug)
			continue
		}
		name := fmt.Sprintf("%02d", st.Number)
		if st.Side {
			name = strings.TrimPrefix(st.Slug, "side_")
		}
		par := fmt.Sprint(ch.Par())
		if ch.Holds {
			par = "— (it holds)"
		}
		if row := fmt.Sprintf("| %s | %s | %s |", name, ch.Says, par); !bytes.Contains(handout, []byte(row)) {
			t.Errorf("docs/handout.md lacks the row %q", row)
		}
		if cmd := fmt.Sprintf("go run ./lab drive %s -solve", name); !bytes.Contains(curriculum, []byte(cmd)) {
			t.Errorf("docs/curriculum.md never shows %q", cmd)
		}
	}
}
