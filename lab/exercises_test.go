package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The exercises of docs/curriculum.md, one per module, each with its answer: a folder of Go under
// trainer/answers that a trainer grades with go run ./lab grade trainer/answers/NAME. Each answer
// promises a row of the matrix; TestExercises grades every answer as lab grade does and holds it
// to that row, cell for cell, and TestDocumentedCommands checks what the curriculum says of each
// grade against the same grading (gradeExercise).

// exerciseDir is where the answers live, from the module's root.
const exerciseDir = "trainer/answers"

// exercise is one exercise: its answer, the folder a learner starts from, and the row it
// promises as lab grade -want reads it (grading.ParseTarget): a step's row, and the cells where
// the answer's is not that step's.
type exercise struct {
	name    string // the answer's folder under exerciseDir: m2_lease
	starter string // the step folder a learner copies to start (steps/03_finally), "" for an empty folder
	want    string // -want's value: 05,unlock-race=ok
}

var exercises = []exercise{
	// Module 0: a lock that always says yes is no lock at all; the faults aimed at a lock's write
	// find none to strike.
	{name: "m0_yes", want: "01,unlock-race=?,failover=?,restart=?,lost-reply=?,load=?,greedy=?"},
	// Module 1: SETNX and DEL under steps.DefaultOrder, which unlocks in a defer: step 03's row.
	{name: "m1_setnx", want: "03"},
	// Module 2: SET NX PX, from step 03's SETNX.
	{name: "m2_lease", starter: "03_finally", want: "04"},
	// Module 3: an owner token, GET then DEL.
	{name: "m3_owner", starter: "04_atomic_ttl", want: "05"},
	// Module 4: the owner token compared and deleted in one script: 05's row but unlock-race.
	{name: "m4_cad", starter: "05_owner", want: "05,unlock-race=ok"},
	// Module 5: a spinning lock with a hold count and a watchdog, from the owner token of 05.
	{name: "m5_watchdog", starter: "05_owner", want: "08"},
	// Module 6: a back-off instead of the spin, and the atomic unlock, from the watchdog of 08.
	{name: "m6_backoff", starter: "08_watchdog", want: "10"},
	// Module 7: the owner is the request.
	{name: "m7_request", starter: "10_retry_jitter", want: "11"},
	// Module 8: fencing tokens on module 2's lock clear oversold wherever a stale holder writes
	// late, and nowhere the counter goes back with the lock.
	{name: "m8_fencing", starter: "04_atomic_ttl", want: "04,slow=overlap+foreign-release,pause=overlap,partition=overlap"},
	// Module 9: step 13 waking only the first waiter.
	{name: "m9_first_waiter", starter: "13_pubsub", want: "14"},
}

// target is the row the exercise promises.
func (e exercise) target(t *testing.T) *grading.Target {
	t.Helper()
	tg, err := grading.ParseTarget(catalog.Find, e.want)
	if err != nil {
		t.Fatalf("%s: %v", e.name, err)
	}
	return tg
}

// sheet is the learner's exercise sheet: per exercise its starter and its target.
const sheet = "docs/exercises.md"

// number is the exercise's number, its module's: m2_lease is exercise 2.
func (e exercise) number() string { return strings.TrimPrefix(strings.SplitN(e.name, "_", 2)[0], "m") }

// folder is the learner's folder for the exercise on the sheet: steps/ex2.
func (e exercise) folder() string { return "steps/ex" + e.number() }

// answerGrade is a documented lab grade that an answer's grade stands for.
type answerGrade struct {
	rel              string // the answer's folder from the module's root
	want, name, save string // -want, -name, -save
}

// exerciseOf says whether args are "grade [-want T] [-name N -save F] DIR" for an answer's folder
// (DIR from the module's root, or from lab/ as the tests run it), or for steps/exN with exercise
// N's target, as the exercise sheet shows it: then that answer's grade stands for the folder's.
func exerciseOf(args []string) (answerGrade, bool) {
	var g answerGrade
	if len(args) < 2 || args[0] != "grade" {
		return g, false
	}
	var dir []string
	for i := 1; i < len(args); i++ {
		flag := map[string]*string{"-want": &g.want, "-name": &g.name, "-save": &g.save}[args[i]]
		switch {
		case flag != nil && i+1 < len(args):
			*flag = args[i+1]
			i++
		case strings.HasPrefix(args[i], "-"):
			return g, false
		default:
			dir = append(dir, args[i])
		}
	}
	if len(dir) != 1 {
		return g, false
	}
	rel := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(dir[0])), "../")
	for _, e := range exercises {
		if rel == exerciseDir+"/"+e.name || (rel == e.folder() && g.want == e.want) {
			g.rel = exerciseDir + "/" + e.name
			return g, true
		}
	}
	return g, false
}

// gradeExercise is lab grade of an answer's folder for TestDocumentedCommands, with -want, -name
// and -save as grade takes them: what it prints, and its error as run would return it (the exit
// status).
func gradeExercise(t *testing.T, args []string) (string, error) {
	a, _ := exerciseOf(args)
	gr := gradeExercises(t)[a.rel]
	if gr.err != nil {
		t.Fatal(gr.err)
	}
	if a.save != "" {
		if err := saveGrade(a.save, a.name, a.want, gr.g, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if a.want != "" {
		tg, err := grading.ParseTarget(catalog.Find, a.want)
		if err != nil {
			return "", err
		}
		var w bytes.Buffer
		w.WriteString(gr.stdout)
		if err := printTarget(&w, a.rel, tg, gr.g.Row); err != nil {
			return w.String(), &childExit{code: 1}
		}
		return w.String(), nil
	}
	if gr.code != 0 {
		return gr.stdout, &childExit{code: gr.code}
	}
	return gr.stdout, nil
}

// TestExercises grades every answer of the curriculum's exercises and holds it to the row it
// promises, cell for cell: the verdict of each scenario, which cells have none, the grade's exit
// status, and the step grade says the row is like. Every folder under trainer/answers is an
// answer listed here, and the curriculum shows how to grade each.
func TestExercises(t *testing.T) {
	t.Parallel() // it builds and runs a grader of its own
	dirs, err := filepath.Glob(filepath.Join("..", exerciseDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	curriculum, err := os.ReadFile(filepath.Join("..", "docs", "curriculum.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		name := filepath.Base(d)
		if !slices.ContainsFunc(exercises, func(e exercise) bool { return e.name == name }) {
			t.Errorf("%s/%s is no exercise's answer: list it in exercises, with the row it promises", exerciseDir, name)
		}
	}
	all := gradeExercises(t)
	t.Cleanup(forgetExerciseGrades)
	for _, e := range exercises {
		rel := exerciseDir + "/" + e.name
		if cmd := "go run ./lab grade " + rel; !bytes.Contains(curriculum, []byte(cmd)) {
			t.Errorf("docs/curriculum.md never shows `%s`", cmd)
		}
		t.Run(e.name, func(t *testing.T) {
			gr := all[rel]
			if gr.err != nil {
				t.Fatal(gr.err)
			}
			if len(gr.g.Row) != len(scenario.Names()) {
				t.Fatalf("%d cells, want %d:\n%s", len(gr.g.Row), len(scenario.Names()), gr.stdout)
			}
			tg := e.target(t)
			for _, m := range tg.Misses(catalog.Steps, gr.g.Row) {
				t.Errorf("under %s: %s, the exercise promises %s", m.Scenario, m.Got, m.Want)
			}
			broken, unjudged := false, false
			var differ []string
			for _, sc := range scenario.Names() {
				want := tg.Want(sc)
				switch _, other := tg.Cells[sc]; {
				case slices.Equal(want, grading.NoVerdict):
					unjudged = true
				case other:
					differ = append(differ, string(sc))
					broken = broken || len(want) > 0
				default:
					broken = broken || len(want) > 0
				}
			}
			wantCode := 0
			if broken || unjudged {
				wantCode = 1
			}
			if gr.code != wantCode {
				t.Errorf("grade exits %d, want %d", gr.code, wantCode)
			}
			st := tg.Step
			on := "" // a row with '?' cells is like a step on the cells it judged (grading.Like)
			if n := grading.Unjudged(gr.g.Row); n > 0 {
				on = fmt.Sprintf(" on the %d of %d it judged; %d not judged", len(gr.g.Row)-n, len(gr.g.Row), n)
			}
			like := fmt.Sprintf("row is %s's (%s), cell for cell%s.", course.Name(st), st.Title, on)
			if len(differ) > 0 {
				like = fmt.Sprintf("row is nearest %s's (%s)%s: it differs under %s.", course.Name(st), st.Title, on, strings.Join(differ, ", "))
			}
			if !strings.Contains(gr.stdout, like) {
				t.Errorf("grade does not say %q:\n%s", like, gr.stdout)
			}
			var w bytes.Buffer
			if err := printTarget(&w, rel, tg, gr.g.Row); err != nil || !strings.HasPrefix(w.String(), "\nTarget met: ") {
				t.Errorf("lab grade -want %s %s: %v\n%s", e.want, rel, err, w.String())
			}
			if t.Failed() {
				t.Logf("lab grade %s:\n%s", rel, gr.stdout)
			}
		})
	}
}

// TestExerciseSheet holds the learner's sheet to the exercises: each has a section with its
// starter (an empty folder, or a copy of the step folder it names) and its target (lab grade
// -want, the row TestExercises holds its answer to, which TestDocumentedCommands grades the answer
// against); a starter's own row is not its target already; every exercise of the curriculum's
// 3-hour cut starts from a step's folder; and the sheet never shows where the answers are.
func TestExerciseSheet(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", sheet))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Contains(text, exerciseDir) {
		t.Errorf("%s shows where the answers are (%s)", sheet, exerciseDir)
	}
	sections := map[string]string{}
	for _, sec := range strings.Split(text, "\n## Exercise ")[1:] {
		n, _, _ := strings.Cut(sec, ":")
		sections[n] = sec
	}
	for _, e := range exercises {
		sec, ok := sections[e.number()]
		if !ok {
			t.Errorf("%s has no section \"## Exercise %s: …\"", sheet, e.number())
			continue
		}
		start := "mkdir " + e.folder()
		if e.starter != "" {
			start = "cp -r steps/" + e.starter + " " + e.folder()
			if _, err := os.Stat(filepath.Join("..", "steps", e.starter)); err != nil {
				t.Errorf("exercise %s starts from %s: %v", e.number(), e.starter, err)
			}
			st, err := catalog.Find(e.starter)
			if err != nil {
				t.Fatal(err)
			}
			var row []cell
			for _, sc := range scenario.Names() {
				row = append(row, cell{Scenario: string(sc), Violations: st.Expect[sc]})
			}
			if len(e.target(t).Misses(catalog.Steps, row)) == 0 {
				t.Errorf("exercise %s: its starter, step %s, meets its target %s already", e.number(), e.starter, e.want)
			}
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(start) + `$`).MatchString(sec) {
			t.Errorf("exercise %s: the sheet does not start it with `%s`", e.number(), start)
		}
		want := e.want
		if strings.Contains(want, "?") {
			want = "'" + want + "'"
		}
		target := "go run ./lab grade -want " + want + " " + e.folder()
		if !strings.Contains(sec, target+"   # exits 0 on target") {
			t.Errorf("exercise %s: the sheet does not give its target as `%s   # exits 0 on target`", e.number(), target)
		}
	}
	curriculum, err := os.ReadFile(filepath.Join("..", "docs", "curriculum.md"))
	if err != nil {
		t.Fatal(err)
	}
	cut, _, _ := strings.Cut(string(curriculum)[strings.Index(string(curriculum), "**The 3-hour cut**"):], "\n\n\n")
	cut, _, _ = strings.Cut(cut, "## ")
	var inCut []string
	for _, m := range regexp.MustCompile(`hands-on: exercise (\d)(?: or exercise (\d))?`).FindAllStringSubmatch(cut, -1) {
		for _, n := range m[1:] {
			if n != "" {
				inCut = append(inCut, n)
			}
		}
	}
	if len(inCut) == 0 {
		t.Fatal("the curriculum's 3-hour cut names no hands-on exercise")
	}
	for _, n := range inCut {
		i := slices.IndexFunc(exercises, func(e exercise) bool { return e.number() == n })
		if i < 0 || exercises[i].starter == "" {
			t.Errorf("exercise %s of the 3-hour cut has no starter folder", n)
		}
	}
}
