package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/lab/serve"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestGradeWantAndClass: lab grade -want 04 passes a copy of step 04 (exit 0) and ends with the
// way on; lab class of two saved grades and a grade's page names every learner in one table,
// beside step 4's row; a saved verdict its history does not bear out is said, and exits 1.
func TestGradeWantAndClass(t *testing.T) {
	t.Parallel() // grade runs a binary of its own (this one: ingrader_test.go)
	four := sharedCopy(t, "04_atomic_ttl", "README.md")
	files := t.TempDir()
	saved, page := filepath.Join(files, "ada.json"), filepath.Join(files, "ada.html")

	code, out, errs := grade(t, "-want", "04", "-name", "ada", "-save", saved, "-html", page, four)
	if code != 0 || !strings.Contains(out, "\nTarget met: your row is step 4's row (") {
		t.Fatalf("a copy of 04, -want 04: exit %d, want 0 and the target met\n%s\n%s", code, out, errs)
	}
	if !regexpLine(out, `^  slow: Under slow it breaks as step 4 \(.*the fix is step 8 \(.*\. Its code: steps/08_watchdog\.$`) {
		t.Errorf("a copy of 04 does not end with the way on under slow:\n%s", out)
	}

	// A second learner's file: the same runs under another name.
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	var s savedRuns
	if err := json.Unmarshal(b, &s); err != nil || s.Name != "ada" || s.Want != "04" || len(s.Runs) != len(scenario.Names()) {
		t.Fatalf("the saved grade: %v, name %q, target %q, %d runs", err, s.Name, s.Want, len(s.Runs))
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), "Target met: your row is step 4&#39;s row") ||
		!strings.Contains(string(b), "The way on, scenario by scenario:") {
		t.Errorf("the grade's page does not say the target met and the way on (%v)", err)
	}
	s.Name, s.Want = "grace", "05" // the same row aimed at step 5's: not met
	grace := filepath.Join(files, "grace.json")
	if b, err = json.Marshal(s); err != nil || os.WriteFile(grace, b, 0o644) != nil {
		t.Fatal(err)
	}

	var cls, clsErr bytes.Buffer
	classPageFile := filepath.Join(files, "class.html")
	if err := run([]string{"class", saved, grace, page, "-html", classPageFile}, &cls, &clsErr); err != nil {
		t.Fatalf("lab class: %v\n%s\n%s", err, cls.String(), clsErr.String())
	}
	table := cls.String()
	st4, _ := catalog.Find("04")
	if strings.Count(table, "| step |") != 1 {
		t.Errorf("not one table:\n%s", table)
	}
	for _, row := range []string{"ada", "grace", `ada \(ada\.html\)`, st4.Slug} {
		if !regexpLine(table, `^\| `+row+` \|`) {
			t.Errorf("the table has no row %s:\n%s", row, table)
		}
	}
	for _, w := range []string{`^ada \(steps/gradetest-[0-9]+\): step 4's row \(.*\. Target met: step 4's row \(`,
		`^grace \(steps/gradetest-[0-9]+\): step 4's row \(.*\. Target not met: step 5's row \(.*\), but under slow \(overlap, oversold, foreign-release, not overlap, oversold\)`} {
		if !regexpLine(table, w) {
			t.Errorf("no line %s:\n%s", w, table)
		}
	}
	if b, err = os.ReadFile(classPageFile); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{">ada<", ">grace<", ">" + st4.Slug + "<", "the class, 3 learners", `target met</small>`, `target not met</small>`, `class="bad differs"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("the class's page has no %q", s)
		}
	}

	// A room lab serve kept, read beside the grades: ada's row of the room says her grade.
	room := writeRoom(t, files)
	cls.Reset()
	if err := run([]string{"class", saved, room}, &cls, &clsErr); err != nil {
		t.Fatalf("lab class with a room: %v\n%s", err, cls.String())
	}
	if !regexpLine(cls.String(), `^ada +since .* ada\.json: step 4's row +05 10/10 +04_atomic_ttl: overlap, oversold$`) || !regexpLine(cls.String(), `^bob .* – +– +–$`) {
		t.Errorf("the room's learners are not beside their grades:\n%s", cls.String())
	}

	// The learner says slow passed: the history says it did not.
	for i := range s.Runs {
		if s.Runs[i].Scenario == string(steps.Slow) {
			s.Runs[i].Violations = []steps.Kind{}
		}
	}
	tampered := filepath.Join(files, "tampered.json")
	if b, err = json.Marshal(s); err != nil || os.WriteFile(tampered, b, 0o644) != nil {
		t.Fatal(err)
	}
	cls.Reset()
	err = run([]string{"class", tampered}, &cls, &clsErr)
	if exitCode(err) != 1 || !strings.Contains(cls.String(), "differs: grace: slow: played ✓, judged again overlap, oversold, foreign-release") {
		t.Errorf("a tampered verdict: exit %d (%v)\n%s", exitCode(err), err, cls.String())
	}
}

// TestTargetNotMet: -want 04 of step 09's row (what a copy of 09 earns) is not met: an error
// (exit 1), one line per cell where the two rows differ with both verdicts, and under load, where
// 09 floods and 04 does not, the step that clears flood and its folder.
func TestTargetNotMet(t *testing.T) {
	st4, _ := catalog.Find("04")
	st9, _ := catalog.Find("09")
	tg, err := grading.ParseTarget(catalog.Find, "04")
	if err != nil {
		t.Fatal(err)
	}
	var row []cell
	var differ []string
	for _, sc := range scenario.Names() {
		row = append(row, cell{Scenario: string(sc), Violations: st9.Expect[sc]})
		if course.CellText(cell{Violations: st4.Expect[sc]}) != course.CellText(cell{Violations: st9.Expect[sc]}) {
			differ = append(differ, string(sc))
		}
	}
	var w bytes.Buffer
	err = printTarget(&w, "steps/mine", tg, row)
	out := w.String()
	if exitCode(err) != 1 || !strings.Contains(out, "\nTarget not met: "+strconv.Itoa(len(differ))+" cells of your row differ from step 4's row (") {
		t.Fatalf("09's row, -want 04: %v, want the target not met in %d cells\n%s", err, len(differ), out)
	}
	for _, sc := range differ {
		want := `^  ` + sc + `: yours ` + regexp.QuoteMeta(course.CellText(cell{Violations: st9.Expect[steps.Scenario(sc)]})) +
			`, the target's ` + regexp.QuoteMeta(course.CellText(cell{Violations: st4.Expect[steps.Scenario(sc)]})) + `\.`
		if !regexpLine(out, want) {
			t.Errorf("the cell under %s is not named with both verdicts (%s):\n%s", sc, want, out)
		}
	}
	if !regexpLine(out, `^  load: yours flood, the target's ✓\. .*step 10 .*Its code: steps/10_retry_jitter\.$`) {
		t.Errorf("under load, the miss does not name the step that clears flood:\n%s", out)
	}
	if !strings.Contains(err.Error(), "not the target's row under "+strings.Join(differ, ", ")) {
		t.Errorf("the error line: %v", err)
	}
}

// TestClassBadInput: no file, a file of runs of several locks, a file with no run: one line
// each, exit 2.
func TestClassBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "class needs the learners' saved grades"},
		{[]string{write("two.json", `{"lockstep":"runs","runs":[{"step":"04_atomic_ttl","scenario":"slow"},{"step":"09_lua_unlock","scenario":"slow"}]}`)}, "holds runs of 04_atomic_ttl and of 09_lua_unlock"},
		{[]string{write("none.json", `{"lockstep":"runs","runs":[]}`)}, "holds no run"},
		{[]string{filepath.Join(dir, "missing.json")}, "no such file"},
	} {
		var out, errw bytes.Buffer
		err := run(append([]string{"class"}, tc.args...), &out, &errw)
		if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("class %v: exit %d, %v; want 2 and one line with %q", tc.args, exitCode(err), err, tc.want)
		}
	}
}

// writeRoom writes a room file as lab serve -save keeps it: ada, who broke step 4 and reached
// step 5's drive goal in par, and bob.
func writeRoom(t *testing.T, dir string) string {
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.Local)
	f := serve.File{Lockstep: "room", Saved: at, Learners: []serve.Learner{
		{Name: "ada", Since: at.Add(-time.Hour), Step: "04_atomic_ttl", Screen: "arena", Fault: "x crash", Key: at, Visits: 1,
			Breaks: []serve.Break{{Step: "04_atomic_ttl", Kind: steps.Overlap, At: at}, {Step: "04_atomic_ttl", Kind: steps.Oversold, At: at}},
			Solved: []serve.Solved{{Step: "05_owner", Moves: 10, Par: 10, At: at}}},
		{Name: "bob", Since: at.Add(-time.Hour), Left: at.Add(-time.Minute), Why: "left", Step: "02_setnx", Screen: "picker", Key: at, Visits: 1},
	}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "room.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestClassReadsARoom: lab class of a room file alone lists its learners, their steps, the last
// fault each pressed, the drive challenges they reached and the breaks they saw; -html of a room alone is bad input (exit 2).
func TestClassReadsARoom(t *testing.T) {
	room := writeRoom(t, t.TempDir())
	var out, errw bytes.Buffer
	if err := run([]string{"class", room}, &out, &errw); err != nil {
		t.Fatalf("lab class room.json: %v\n%s", err, errw.String())
	}
	for _, re := range []string{`^The room in .*room\.json \(saved 2026-11-28 09:30\): 2 learners$`,
		`^ada +since 08:30 +04_atomic_ttl +x crash +05 10/10 +04_atomic_ttl: overlap, oversold$`,
		`^bob +left 09:29 \(left\) +02_setnx +– +– +–$`} {
		if !regexpLine(out.String(), re) {
			t.Errorf("no line %s in:\n%s", re, out.String())
		}
	}
	if strings.Contains(out.String(), "| step |") {
		t.Errorf("a room alone printed a table of grades:\n%s", out.String())
	}
	err := run([]string{"class", "-html", filepath.Join(t.TempDir(), "class.html"), room}, &out, &errw)
	if exitCode(err) != 2 || strings.Contains(err.Error(), "\n") {
		t.Errorf("-html of a room alone: exit %d, %v; want 2 and one line", exitCode(err), err)
	}
}
