package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The exercises of docs/curriculum.md, one per module, each with its answer: a folder of Go under
// docs/exercises that a trainer grades with go run ./lab grade docs/exercises/NAME. Each answer
// promises a row of the matrix; TestExercises grades every answer as lab grade does and holds it
// to that row, cell for cell, and TestDocumentedCommands checks what the curriculum says of each
// grade against the same grading (gradeExercise).

// exerciseDir is where the answers live, from the module's root.
const exerciseDir = "docs/exercises"

// exercise is one answer and the row it promises: the row of the step like, but under the
// scenarios in differ, where it is differ's; and no verdict (?) under the scenarios in unjudged.
type exercise struct {
	name     string
	like     string // the step whose row the answer's is, or is nearest to
	differ   map[steps.Scenario][]steps.Kind
	unjudged []steps.Scenario
}

var exercises = []exercise{
	// Module 0: a lock that always says yes is no lock at all; the faults aimed at a lock's write
	// find none to strike.
	{name: "m0_yes", like: "01", unjudged: []steps.Scenario{steps.UnlockRace, steps.Failover, steps.Restart, steps.LostReply, steps.Load, steps.Greedy}},
	// Module 1: SETNX and DEL under steps.DefaultOrder, which unlocks in a defer: step 03's row.
	{name: "m1_setnx", like: "03"},
	// Module 2: SET NX PX.
	{name: "m2_lease", like: "04"},
	// Module 3: an owner token, GET then DEL.
	{name: "m3_owner", like: "05"},
	// Module 4: the owner token compared and deleted in one script: 05's row but unlock-race.
	{name: "m4_cad", like: "05", differ: map[steps.Scenario][]steps.Kind{steps.UnlockRace: nil}},
	// Module 5: a spinning lock with a watchdog.
	{name: "m5_watchdog", like: "08"},
	// Module 6: a back-off instead of the spin, and the atomic unlock.
	{name: "m6_backoff", like: "10"},
	// Module 7: the owner is the request.
	{name: "m7_request", like: "11"},
	// Module 8: fencing tokens on module 2's lock clear oversold wherever a stale holder writes
	// late, and nowhere the counter goes back with the lock.
	{name: "m8_fencing", like: "04", differ: map[steps.Scenario][]steps.Kind{
		steps.Slow:      {steps.Overlap, steps.ForeignRelease},
		steps.Pause:     {steps.Overlap},
		steps.Partition: {steps.Overlap},
	}},
	// Module 9: step 13 waking only the first waiter.
	{name: "m9_first_waiter", like: "14"},
}

// want is the verdict the exercise promises under sc.
func (e exercise) want(t *testing.T, sc steps.Scenario) []steps.Kind {
	if k, ok := e.differ[sc]; ok {
		return k
	}
	st, err := catalog.Find(e.like)
	if err != nil {
		t.Fatalf("%s: %v", e.name, err)
	}
	return st.Expect[sc]
}

// graded is one answer graded: the row, what lab grade prints, and its exit status.
type graded struct {
	g      matrix.Graded
	stdout string
	code   int
	err    error // the grading failed: no row
}

// exerciseGrades are the answers graded, by folder from the module's root
// ("docs/exercises/m2_lease"), for the tests that ask until TestExercises has read them: each
// round of go test -count grades them again.
var exerciseGrades struct {
	sync.Mutex
	by map[string]*graded
}

// gradeExercises grades every answer once for all the tests that ask, as lab grade grades a folder
// (gradeLearner): the learner's package laid over internal/matrix's test binary with go test -c
// -overlay, and TestGrade run in it, every cell in virtual time. One binary holds every answer, and
// $LOCKSTEP_EXERCISE picks the one TestGrade plays: one link instead of one per answer. The
// answers play as many at a time as there are cores, each in a process of its own.
func gradeExercises(t *testing.T) map[string]*graded {
	t.Helper()
	exerciseGrades.Lock()
	defer exerciseGrades.Unlock()
	if exerciseGrades.by == nil {
		by, err := gradeAllExercises()
		if err != nil {
			t.Fatal(err)
		}
		exerciseGrades.by = by
	}
	return exerciseGrades.by
}

// forgetExerciseGrades makes the next gradeExercises grade every answer again.
func forgetExerciseGrades() {
	exerciseGrades.Lock()
	exerciseGrades.by = nil
	exerciseGrades.Unlock()
}

func gradeAllExercises() (map[string]*graded, error) {
	var pkgs []*grading.Pkg
	for _, e := range exercises {
		p, err := grading.Inspect(filepath.Join("..", exerciseDir, e.name))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", e.name, unwrapUsage(err))
		}
		pkgs = append(pkgs, p)
	}
	tmp, err := os.MkdirTemp("", "lockstep-exercises-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin, err := grading.Build(context.Background(), pkgs[0], exercisesOverlay(pkgs), tmp)
	if err != nil {
		return nil, fmt.Errorf("building the grader with every answer: %v", err)
	}
	out := map[string]*graded{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, runtime.NumCPU())
	for i, p := range pkgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			gr := playExercise(bin, p, filepath.Join(tmp, fmt.Sprintf("row%d.json", i)))
			mu.Lock()
			out[p.Rel] = gr
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out, nil
}

// exerciseEnv names the answer the grader plays.
const exerciseEnv = "LOCKSTEP_EXERCISE"

// exercisesOverlay is grading.GraderOverlay for every answer at once: TestGrade plays the one
// $LOCKSTEP_EXERCISE names, registered as grading.GraderOverlay registers a learner's package (one lock
// node: no answer is a quorum lock).
func exercisesOverlay(pkgs []*grading.Pkg) grading.Overlay {
	var imports, cases strings.Builder
	for i, p := range pkgs {
		order := "steps.DefaultOrder"
		if p.HasOrder {
			order = fmt.Sprintf("answer%d.Order", i)
		}
		fmt.Fprintf(&imports, "\tanswer%d %q\n", i, p.ImportPath)
		fmt.Fprintf(&cases, "\tcase %q:\n\t\tlearner = &steps.Step{Slug: %q, Side: true, Nodes: 1, New: answer%d.New, Order: %s}\n\t\tlearnerPkg = %q\n",
			p.Rel, p.Rel, i, order, p.ImportPath)
	}
	return grading.Overlay{Pkg: "internal/matrix", Name: "zz_learner_overlay_test.go", Args: []string{"test", "-c"}, What: "the grader", Code: fmt.Sprintf(`// Code generated by lab's TestExercises; DO NOT EDIT.

package matrix_test

import (
	"os"

	"github.com/lockstep-lab/lockstep/steps"
%s)

func init() {
	switch os.Getenv(%q) {
%s	}
}
`, imports.String(), exerciseEnv, cases.String())}
}

// playExercise runs the grader on p as gradeLearner runs it, and prints the row as grade does.
func playExercise(bin string, p *grading.Pkg, out string) *graded {
	cmd := exec.Command(bin, "-test.run=^TestGrade$", "-test.count=1")
	cmd.Dir = filepath.Join(p.Root, "internal", "matrix")
	cmd.Env = append(os.Environ(), matrix.GradeOut+"="+out, "LAB_REDIS=", exerciseEnv+"="+p.Rel)
	log, runErr := cmd.CombinedOutput()
	gr := &graded{}
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, &gr.g)
	}
	switch {
	case err == nil && (gr.g.Hung != "" || gr.g.Err != ""):
		gr.err = fmt.Errorf("%s: %s%s", p.Rel, gr.g.Hung, gr.g.Err)
	case err != nil || runErr != nil:
		gr.err = fmt.Errorf("the grader of %s failed: %v %v\n%s", p.Rel, err, runErr, log)
	}
	if gr.err != nil {
		return gr
	}
	var stdout bytes.Buffer
	gerr := printGraded(p.Rel, gr.g, false, &stdout)
	gr.stdout, gr.code = stdout.String(), exitCode(gerr)
	return gr
}

// exerciseOf says whether args are "grade DIR" for an answer's folder (DIR from the module's
// root, or from lab/ as the tests run it), and which: its folder from the module's root.
func exerciseOf(args []string) (string, bool) {
	if len(args) != 2 || args[0] != "grade" {
		return "", false
	}
	rel := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(args[1])), "../")
	return rel, slices.ContainsFunc(exercises, func(e exercise) bool { return rel == exerciseDir+"/"+e.name })
}

// gradeExercise is lab grade of an answer's folder for TestDocumentedCommands: what it prints,
// and its error as run would return it (the exit status).
func gradeExercise(t *testing.T, args []string) (string, error) {
	rel, _ := exerciseOf(args)
	gr := gradeExercises(t)[rel]
	if gr.err != nil {
		t.Fatal(gr.err)
	}
	if gr.code != 0 {
		return gr.stdout, &childExit{code: gr.code}
	}
	return gr.stdout, nil
}

// TestExercises grades every answer of the curriculum's exercises and holds it to the row it
// promises, cell for cell: the verdict of each scenario, which cells have none, the grade's exit
// status, and the step grade says the row is like. Every folder under docs/exercises is an
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
			broken := false
			for _, c := range gr.g.Row {
				sc := steps.Scenario(c.Scenario)
				want := e.want(t, sc)
				if slices.Contains(e.unjudged, sc) {
					if len(c.Unjudged) == 0 {
						t.Errorf("under %s: a verdict (%v), the exercise promises none", sc, c.Violations)
					}
					continue
				}
				if len(c.Unjudged) > 0 || c.Skipped != "" {
					t.Errorf("under %s: no verdict (%s%s), the exercise promises %v", sc, c.Why, c.Skipped, want)
					continue
				}
				if !slices.Equal(c.Violations, want) && len(c.Violations)+len(want) > 0 {
					t.Errorf("under %s: %v, the exercise promises %v", sc, c.Violations, want)
				}
				broken = broken || len(want) > 0
			}
			wantCode := 0
			if broken || len(e.unjudged) > 0 {
				wantCode = 1
			}
			if gr.code != wantCode {
				t.Errorf("grade exits %d, want %d", gr.code, wantCode)
			}
			st, _ := catalog.Find(e.like)
			on := "" // a row with '?' cells is like a step on the cells it judged (grading.Like)
			if n := grading.Unjudged(gr.g.Row); n > 0 {
				on = fmt.Sprintf(" on the %d of %d it judged; %d not judged", len(gr.g.Row)-n, len(gr.g.Row), n)
			}
			like := fmt.Sprintf("row is %s's (%s), cell for cell%s.", course.Name(st), st.Title, on)
			if len(e.differ) > 0 {
				var under []string
				for _, sc := range scenario.Names() {
					if _, ok := e.differ[sc]; ok {
						under = append(under, string(sc))
					}
				}
				like = fmt.Sprintf("row is nearest %s's (%s)%s: it differs under %s.", course.Name(st), st.Title, on, strings.Join(under, ", "))
			}
			if !strings.Contains(gr.stdout, like) {
				t.Errorf("grade does not say %q:\n%s", like, gr.stdout)
			}
			if t.Failed() {
				t.Logf("lab grade %s:\n%s", rel, gr.stdout)
			}
		})
	}
}
