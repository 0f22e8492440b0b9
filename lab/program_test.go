package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// exploredProgram is a program lab explore found in step 04 and saved, as a learner makes one.
func exploredProgram(t *testing.T) string {
	t.Helper()
	saved := filepath.Join(t.TempDir(), "found.json")
	if code, out, errs := exploreLab(t, "-programs", "20", "-save", saved, "04"); code != 1 {
		t.Fatalf("explore 04: exit %d, want 1 (a break)\n%s\n%s", code, out, errs)
	}
	return saved
}

// judged is lab judge -json's verdict of the one run in file.
func judged(t *testing.T, file string) cell {
	t.Helper()
	var out, errw bytes.Buffer
	if err := run([]string{"judge", "-json", file}, &out, &errw); err != nil {
		t.Fatalf("lab judge %s: %v\n%s", file, err, errw.String())
	}
	var cells []cell
	if err := json.Unmarshal(out.Bytes(), &cells); err != nil || len(cells) != 1 {
		t.Fatalf("lab judge -json %s: %v\n%s", file, err, out.String())
	}
	return cells[0]
}

// TestProgramFromExplore: what explore -save wrote for a program it found in step 04 opens as
// the terminal lab's program (lab -program): its step, the program in explore's words, its
// recorded run and the verdict lab judge gives the file. The replay itself is lab/tui's test.
func TestProgramFromExplore(t *testing.T) {
	t.Parallel() // explore builds and runs a binary of its own
	file := exploredProgram(t)
	want := judged(t, file)
	p, err := loadProgram(file, catalog.Steps)
	if err != nil {
		t.Fatal(err)
	}
	if p.Step.Slug != "04_atomic_ttl" || p.File != file || len(p.Story) < 2 || !strings.HasPrefix(p.Story[1], "buyer 1: ") {
		t.Fatalf("loaded: step %s, file %s, story %q", p.Step.Slug, p.File, p.Story)
	}
	if p.History == nil || len(p.History.Records) == 0 || len(want.Violations) == 0 ||
		!slices.Equal(p.Violations, want.Violations) || !slices.Equal(p.Unjudged, want.Unjudged) {
		t.Errorf("the program's recorded verdict %v (unjudged %v), lab judge's %v (unjudged %v)", p.Violations, p.Unjudged, want.Violations, want.Unjudged)
	}
}

// TestProgramBadInput: -program with no such file, a file that is not explore's, or a program of a
// lock this lab does not have says what in one line and exits 2 before the screen opens.
func TestProgramBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	program := func(step string) string {
		return `{"lockstep":"runs","runs":[{"step":"` + step + `","scenario":"explore","history":{"step":"` + step +
			`","scenario":"explore","records":[]}}],"program":{"stock":1,"buyers":[{"orders":[{}]}]}}`
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no such file", []string{"-program", filepath.Join(dir, "nope.json")}, "no such file"},
		{"not JSON", []string{"-program", write("notes.txt", "buyer 1 got in\n")}, "not a program lab explore -save wrote"},
		{"a run, not a program", []string{"-program", recordedFile}, "not a program lab explore -save wrote"},
		{"a program of your lock", []string{"-program", write("mine.json", program("steps/mine"))}, "lab -dir steps/mine -program "},
		{"a program of no step", []string{"-program", write("gone.json", program("99_gone"))}, `"99_gone", which is no step of this lab`},
		{"no file named", []string{"-program"}, "flag needs an argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			err := run(tc.args, &out, &errw)
			msg := ""
			if err != nil {
				msg = unwrapUsage(err)
			}
			if exitCode(err) != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) || out.Len() > 0 {
				t.Errorf("exit %d, want 2 and one line with %q: %q\nstdout: %s", exitCode(err), tc.want, msg, out.String())
			}
		})
	}
}
