package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// exploredProgram is a program lab explore found in step 04 and saved, as a learner makes one.
func exploredProgram(t *testing.T) string {
	t.Helper()
	saved := filepath.Join(t.TempDir(), "found.json")
	if code, out, errs := exploreLab(t, "-budget", "20s", "-save", saved, "04"); code != 1 {
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

// TestProgramFromExplore plays in the lab a program explore found in step 04 and saved.
func TestProgramFromExplore(t *testing.T) {
	t.Parallel() // explore builds and runs a binary of its own
	file := exploredProgram(t)
	t.Run("replays to judge's verdict", func(t *testing.T) { replaysToJudgesVerdict(t, file) })
	t.Run("says a verdict that differs", func(t *testing.T) { saysAVerdictThatDiffers(t, file) })
}

// replaysToJudgesVerdict: lab -program on what explore -save wrote opens the arena on its step,
// shows the program in explore's words, plays the recorded run no faster than it was recorded (at
// -speed 1), and ends on the verdict lab judge gives the file, kind by kind, said to be the one the
// file records; then , home and . rewind it as after b.
func replaysToJudgesVerdict(t *testing.T, file string) {
	want := judged(t, file)
	p, err := loadProgram(file, catalog.Steps)
	if err != nil {
		t.Fatal(err)
	}
	if p.step.Slug != "04_atomic_ttl" || len(p.story) < 2 || !strings.HasPrefix(p.story[1], "buyer 1: ") {
		t.Fatalf("loaded: step %s, story %q", p.step.Slug, p.story)
	}
	recorded := p.run.History.Records[len(p.run.History.Records)-1].At
	start := time.Now()
	fm, v := runTeaModel(t, newModel(tuiOptions{offline: true, slow: 1, program: p}), 100, 40, "the verdict the file records")
	if took := time.Since(start); took < recorded {
		t.Errorf("the recorded run of %v played in %v: not at the lab's pace", recorded, took)
	}
	a := fm.ar
	if a == nil || a.rep == nil || !a.done {
		t.Fatalf("no finished replay on the arena:\n%s", v)
	}
	if !slices.Equal(orNone(a.rep.Violations), orNone(want.Violations)) || !slices.Equal(orNone(a.rep.Unjudged), orNone(want.Unjudged)) || len(want.Violations) == 0 {
		t.Errorf("the lab's verdict %v (unjudged %v), lab judge's %v (unjudged %v)", a.rep.Violations, a.rep.Unjudged, want.Violations, want.Unjudged)
	}
	flatV := strings.Join(strings.Fields(v), " ")
	wants := []string{"Step 4/", "program " + file, "PROGRAM " + p.story[0], "✗ Step 4 broke under the program", "the verdict the file records"}
	for _, l := range p.story[1:] {
		wants = append(wants, l)
	}
	for _, k := range steps.Kinds {
		mark := "✓ "
		if slices.Contains(want.Violations, k) {
			mark = "✗ "
		}
		wants = append(wants, mark+string(k))
	}
	for _, w := range wants {
		if !strings.Contains(flatV, w) {
			t.Errorf("the view lacks %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "the fix is") {
		t.Errorf("an explored program names a fix, which no step's row covers:\n%s", v)
	}
	press(fm, ",")
	press(fm, "home")
	if v := flat(fm); !strings.Contains(v, "◀▶ 1/") || !strings.Contains(v, "buyer ") || !strings.Contains(v, "PROGRAM ") {
		t.Errorf("home in rewind: want the first event, the program still in sight:\n%s", fm.View())
	}
	press(fm, ".")
	if v := flat(fm); !strings.Contains(v, "◀▶ 2/") {
		t.Errorf(". in rewind: want the second event:\n%s", fm.View())
	}
}

// saysAVerdictThatDiffers: when the file records another verdict than the referee gives its
// history now, the lab shows the referee's, and says the file's beside it.
func saysAVerdictThatDiffers(t *testing.T, file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s["runs"].([]any)[0].(map[string]any)["violations"] = []string{"stuck"}
	edited := filepath.Join(t.TempDir(), "edited.json")
	if b, err = json.Marshal(s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edited, b, 0o644); err != nil {
		t.Fatal(err)
	}
	want := judged(t, file)
	p, err := loadProgram(edited, catalog.Steps)
	if err != nil {
		t.Fatal(err)
	}
	fm, _ := runTeaModel(t, newModel(tuiOptions{offline: true, slow: 1, program: p}), 100, 30, "the file records stuck")
	if !slices.Equal(fm.ar.rep.Violations, want.Violations) || !strings.Contains(fm.msg, "judged again: "+course.KindList(want.Violations)) {
		t.Errorf("the lab says %q with the verdict %v; lab judge's %v", fm.msg, fm.ar.rep.Violations, want.Violations)
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
