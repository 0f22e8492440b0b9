package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
)

// TestHeadlessBadInput: every kind of bad input is a usage error (exit 2) with one line.
func TestHeadlessBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "-step", "99", "-scenario", "slow"},
		{"run", "-step", "04", "-scenario", "nope"},
		{"run", "-step", "04"},
		{"run", "-bogus"},
		{"run", "-step", "04", "-scenario", "slow", "extra"},
		{"run", "-step", "04", "-scenario", "slow", "-redis", "mongodb://x"},
		{"matrix", "-json=maybe"},
	} {
		var out, errw bytes.Buffer
		err := run(args, &out, &errw)
		if !errors.Is(err, errUsage) {
			t.Errorf("%v: want a usage error, got %v", args, err)
			continue
		}
		if msg := unwrapUsage(err); strings.Contains(msg, "\n") || msg == "" {
			t.Errorf("%v: want one line, got %q", args, msg)
		}
	}
}

// TestHeadlessRunJSON: the JSON report names the step, the scenario and the judged violations.
func TestHeadlessRunJSON(t *testing.T) {
	inVirtualTime(t)
	var out, errw bytes.Buffer
	if err := run([]string{"run", "-step", "atomic_ttl", "-scenario", "slow", "-json"}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Step, Scenario string
		Violations     []steps.Kind
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	want := []steps.Kind{steps.Overlap, steps.Oversold, steps.ForeignRelease}
	if rep.Step != "04_atomic_ttl" || rep.Scenario != "slow" || !slices.Equal(rep.Violations, want) {
		t.Fatalf("got %s %s %v, want 04_atomic_ttl slow %v", rep.Step, rep.Scenario, rep.Violations, want)
	}
}

// TestRenderMatrix: a row per step, ✓ for no violation, kinds joined otherwise.
func TestRenderMatrix(t *testing.T) {
	var cells []cell
	for i, sc := range scenario.Names() {
		c := cell{Step: "01_naive", Scenario: string(sc), Violations: []steps.Kind{}}
		if i == 0 {
			c.Violations = []steps.Kind{steps.Overlap, steps.Oversold}
		}
		cells = append(cells, c)
	}
	got := renderMatrix(cells)
	want := "| 01_naive | overlap, oversold" + strings.Repeat(" | ✓", len(scenario.Names())-1) + " |\n"
	if !strings.HasSuffix(got, want) {
		t.Fatalf("last row:\n%s\nwant:\n%s", got, want)
	}
	b, _ := json.Marshal(cells[1])
	if string(b) != `{"step":"01_naive","scenario":"error","violations":[]}` {
		t.Fatalf("cell JSON: %s", b)
	}
}

// needRedisServer starts a redis-server backend, or skips the test where the machine has none
// (and fails it under CI=true, where a missing backend must not pass in silence).
func needRedisServer(t *testing.T) *redisenv.Server {
	t.Helper()
	s, err := redisenv.NewServer()
	if errors.Is(err, redisenv.ErrNoRedisServer) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestBackendThatCannotStart: a backend that is named right but cannot be reached is the
// machine's fault, not the caller's: exit 1, one line.
func TestBackendThatCannotStart(t *testing.T) {
	var out, errw bytes.Buffer
	err := run([]string{"run", "-step", "04", "-scenario", "slow", "-redis", "redis://127.0.0.1:1"}, &out, &errw)
	if err == nil || errors.Is(err, errUsage) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line environment error, got %v", err)
	}
}

// TestRunRepeat: -repeat plays a cell several times and succeeds only if every verdict matched.
func TestRunRepeat(t *testing.T) {
	inVirtualTime(t)
	var out, errw bytes.Buffer
	if err := run([]string{"run", "-step", "05", "-scenario", "unlock-race", "-repeat", "3"}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "3 runs, 0 differ") {
		t.Fatalf("unexpected summary:\n%s", out.String())
	}
}

// TestJudgeSavedRuns: a matrix saved with -save is judged again, offline, to the verdicts it
// earned (the documentation's test does so for the whole matrix); a history with a record taken
// out is judged otherwise, and says so (exit 1).
func TestJudgeSavedRuns(t *testing.T) {
	inVirtualTime(t)
	file := filepath.Join(t.TempDir(), "runs.json")
	var out, errw bytes.Buffer
	if err := run([]string{"matrix", "-steps", "04,05", "-save", file}, &out, &errw); err != nil {
		t.Fatalf("%v\n%s", err, errw.String())
	}
	out.Reset()
	if err := run([]string{"judge", file}, &out, &errw); err != nil {
		t.Fatalf("judge: %v\n%s", err, out.String())
	}
	n := 2 * len(scenario.Names())
	if want := fmt.Sprintf("%d runs judged again from their histories: %d as when played, 0 differ", n, n); !strings.Contains(out.String(), want) {
		t.Errorf("judge: want %q\n%s", want, out.String())
	}
	// Take out of 05 × unlock-race the record of the foreign delete: judged again, it differs.
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var saved savedRuns
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	cut := false
	for i, r := range saved.Runs {
		if r.Step != "05_owner" || r.Scenario != "unlock-race" {
			continue
		}
		h := r.History
		for j := len(h.Records) - 1; j >= 0 && !cut; j-- {
			if rec := h.Records[j]; rec.Kind == history.RecCmd && rec.Buyer == 1 && len(rec.Cmds) == 1 && rec.Cmds[0].Name == "del" {
				h.Records = append(h.Records[:j:j], h.Records[j+1:]...)
				cut = true
			}
		}
		saved.Runs = []savedRun{saved.Runs[i]}
		break
	}
	if !cut {
		t.Fatal("05 × unlock-race has no DEL of buyer 1 to take out")
	}
	b, _ = json.Marshal(saved)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = run([]string{"judge", file}, &out, &errw)
	if exitCode(err) != 1 || !strings.Contains(out.String(), "differs: 05_owner × unlock-race: played foreign-release, judged again ✓") {
		t.Errorf("a history with its delete taken out: exit %d\n%s", exitCode(err), out.String())
	}
	if err := run([]string{"judge", filepath.Join(t.TempDir(), "none.json")}, &out, &errw); exitCode(err) != 2 {
		t.Errorf("a file that is not there: exit %d, want 2", exitCode(err))
	}
}

// TestHeadlessGraderFails: where the grader cannot be built — no lockstep module around the
// working directory, or go refusing the build — lab run and lab matrix on the embedded backend say
// so in one line and exit 1, and leave no build behind; they never fall back to the wall clock.
func TestHeadlessGraderFails(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the grader's build would go
	for _, tc := range []struct {
		name, want string
		args       []string
		setup      func(t *testing.T)
	}{
		{"outside the module", "not inside lockstep's module", []string{"matrix", "-steps", "04,05"},
			func(t *testing.T) { t.Chdir(t.TempDir()) }},
		{"go refuses the build", "go test -c ./internal/matrix (the grader)", []string{"run", "-step", "08", "-scenario", "slow"},
			// -gcflags, not -ldflags: the grader's own -ldflags (grading.SeededFlags) would
			// override a GOFLAGS one, and the build would go through.
			func(t *testing.T) { t.Setenv("GOFLAGS", "-gcflags=-bogus") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			var out, errw bytes.Buffer
			err := run(tc.args, &out, &errw)
			if code := exitCode(err); code != 1 || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("exit %d, %v: want exit 1 and one line saying %q", code, err, tc.want)
			}
			if out.Len() > 0 {
				t.Errorf("something was played: %s", out.String())
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "lockstep-grade-*")); len(left) > 0 {
		t.Errorf("a build was left behind: %v", left)
	}
}
