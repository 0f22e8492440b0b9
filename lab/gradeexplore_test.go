package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestGradeExplores: after the scenarios, grade explores the lock it graded (200 programs, at most
// 30 s, by default), in the grader that
// graded it, and says what it found as lab explore says it, but only what the row did not show: a
// copy of step 09 breaks with flood after a lost reply (its row has flood under load alone), its
// shrunk program in words with the command that plays it again, and the overlap, oversold and
// foreign-renewal a partition brought are said as shown already (with -want the target decides the exit status
// still: 09's row is 09's); a copy of step 17 holds, and the grade says in how many programs
// nothing broke it.
func TestGradeExplores(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own; it waits for nothing of this process
	t.Run("found", func(t *testing.T) {
		t.Parallel() // grade builds and runs a binary of its own
		// End to end: explored in the real grader, built with the copy laid over it.
		dir := builtCopy(t, "09_lua_unlock", "README.md")
		code, out, errs := grade(t, "-explore", "30s", "-want", "09", dir) // the default, which the helper would turn off
		if code != 0 {
			t.Fatalf("exit %d, want 0 (the target met)\n%s\n%s", code, out, errs)
		}
		found := regexp.MustCompile(`(?s)Target met: .*\nExploring 200 programs \(at most 30s\) more.*\n` + regexp.QuoteMeta(relDir(dir)) + ` broke \(flood\) in \d+ programs from seed 1 \(.*\); the worst first:\n\nflood: first in program \d+ \(seed \d+\), shrunk from .*\n  \d+ units? on the shelf\n  buyer 1: .*lost-reply.*\n  verdict: flood\n.*\n  replay: go run \./lab explore -program '\{.*\}' ` + regexp.QuoteMeta(relDir(dir)) + `\n\nAlso found, as the scenarios showed already: overlap under partition; oversold under partition; foreign-renewal under partition\.\n$`)
		if !found.MatchString(out) {
			t.Errorf("no break said after the grade, with its program and the command that replays it:\n%s", out)
		}
		if strings.Count(errs, "lab: building the grader") != 1 || strings.Contains(errs, "building the explorer") {
			t.Errorf("grade built more than its grader:\n%s", errs)
		}
	})
	t.Run("nothing found", func(t *testing.T) {
		t.Parallel() // grade runs a binary of its own (this one: ingrader_test.go)
		dir := sharedCopy(t, "17_atomic_stock", "README.md", "idea_test.go")
		code, out, errs := grade(t, "-explore", "2s", "-programs", "0", dir)
		if code != 0 {
			t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
		}
		nothing := regexp.MustCompile(`\nExploring 2s more.*\n` + regexp.QuoteMeta(relDir(dir)) + `: nothing broke the lock in ([1-9]\d*) programs from seed 1 \(.* simulated, .* of wall time, \d+ programs/s\).*\n$`)
		if !nothing.MatchString(out) {
			t.Errorf("no line after the grade saying in how many programs nothing broke the lock:\n%s", out)
		}
	})
}

// TestGradeExploreBadInput: a negative -explore or -programs is bad input, in one line, before anything is
// built.
func TestGradeExploreBadInput(t *testing.T) {
	for _, args := range [][]string{{"-explore", "-1s"}, {"-programs", "-1"}} {
		code, out, errs := grade(t, append(args, "steps/no-such-lock")...)
		if lines := strings.Split(strings.TrimSpace(errs), "\n"); code != 2 || len(lines) != 1 || !strings.Contains(errs, strings.Join(args, " ")) || out != "" {
			t.Errorf("%v: exit %d, want 2 and one line about it:\n%s\n%s", args, code, errs, out)
		}
	}
}

// relDir is a learner's folder as grade names it: from the module's root.
func relDir(dir string) string { return "steps/" + dir[strings.LastIndex(dir, "/")+1:] }
