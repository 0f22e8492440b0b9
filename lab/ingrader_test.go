package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// This binary as the grader of the learners it holds. lab grade and lab explore build a grader
// (internal/matrix's test binary) or an explorer (internal/explore's) with the learner's package
// laid over it: a compile and a link, seconds of CPU each, for every learner's folder. Most of the
// lab's tests grade an unchanged copy of a step (sharedCopy), whose package this binary holds
// already, as the catalog's step. For those, buildPkg builds nothing: it hands the command this
// binary itself, which, run as the command runs its grader (-test.run=^TestGrade$ or
// ^TestExplore$, and the grader's environment), plays the copy as the grader's TestGrade and
// TestExplore do, with the same code (matrix.Grade, explore.Serve), in a process of its own. The
// step it plays is the one the overlay's generated code declares (its slug, lock nodes and order
// handler, read from that code), with the step's New: what a build of the copy would play. What
// the command does with the binary — its files, its process, its words, Ctrl-C — is the same.
// What is not done is the build: the tests that build the real grader and explorer with a
// learner's package laid over it are the end-to-end ones (builtCopy, sharedLearner, copyStep).

// inGraderFile is the file beside the binary that makes it a grader, and says of which learner.
const inGraderFile = "ingrader.json"

// inGraderSpec is the learner a binary run as a grader plays: its step's package, and the rest as
// the overlay's code declares it.
type inGraderSpec struct {
	Step     string `json:"step"`      // the catalog's step whose package the copy is
	Slug     string `json:"slug"`      // the learner's slug: its folder from the module's root
	Nodes    int    `json:"nodes"`     // lock nodes
	OwnOrder bool   `json:"own_order"` // the overlay hands over the package's Order, not steps.DefaultOrder
	Pkg      string `json:"pkg"`       // the import path whose frames name a run's cause
}

// inBinary are the learners' folders this binary grades (absolute, symbolic links resolved), by
// the step whose unchanged copy each is.
var inBinary struct {
	sync.Mutex
	steps map[string]string
}

// gradeInBinary says this binary grades dir, an unchanged copy of step slug (sharedFolder).
func gradeInBinary(t *testing.T, dir, slug string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		t.Fatal(err)
	}
	inBinary.Lock()
	defer inBinary.Unlock()
	if inBinary.steps == nil {
		inBinary.steps = map[string]string{}
	}
	inBinary.steps[abs] = slug
}

// overlayLearner is the line of GraderOverlay's generated code (lab/grading) that declares the
// learner's step and its import path: slug, lock nodes, Order, Needs, package.
var overlayLearner = regexp.MustCompile(`learner = &steps\.Step\{Slug: ("[^"]*"), Side: true, Nodes: (\d+), New: yourlock\.New, Order: (yourlock\.Order|steps\.DefaultOrder), Needs: (nil|\[\]steps\.Need\{[^\n]*\})\}\s+learnerPkg = ("[^"]*")`)

// gradeHere is buildPkg for a learner this binary grades: it links this binary into dir as the
// build's binary, with the spec of what it plays beside it. ok is false for any other learner,
// for an overlay that is no grader's, for a learner whose package-level state is played per
// process (a copy of its package for each process: ov.Copies) or whose Needs are not its step's,
// and under the race detector: those are built, as every grade's grader was before this file. A
// grader is built without -race, as a learner's is: this binary would play the row under the
// detector, as no learner's grader does.
func gradeHere(p *grading.Pkg, ov grading.Overlay, dir string) (bin string, ok bool, err error) {
	if raceDetector {
		return "", false, nil
	}
	inBinary.Lock()
	step, held := inBinary.steps[p.Abs]
	inBinary.Unlock()
	if !held || ov.Pkg != "internal/matrix" || len(ov.Copies) > 0 {
		return "", false, nil
	}
	m := overlayLearner.FindStringSubmatch(ov.Code)
	if m == nil {
		return "", true, fmt.Errorf("the overlay of %s for %s declares no learner as this binary reads it (ingrader_test.go's overlayLearner):\n%s", p.Rel, ov.What, ov.Code)
	}
	st, err := catalog.Find(step)
	if err != nil {
		return "", true, err
	}
	if m[4] != grading.NeedsCode(st.Needs) {
		return "", false, nil
	}
	spec := inGraderSpec{Step: step, OwnOrder: m[3] == "yourlock.Order"}
	spec.Nodes, _ = strconv.Atoi(m[2])
	pkg, err1 := strconv.Unquote(m[5])
	slug, err2 := strconv.Unquote(m[1])
	if err1 != nil || err2 != nil || pkg != p.ImportPath {
		return "", true, fmt.Errorf("the overlay of %s hands over %s as %s, not %s", p.Rel, m[5], m[1], p.ImportPath)
	}
	if spec.OwnOrder && !p.HasOrder { // as the build would fail: yourlock.Order is undefined
		return "", true, fmt.Errorf("the overlay of %s hands over its Order, which it does not export", p.Rel)
	}
	spec.Slug, spec.Pkg = slug, grading.ModulePath+"/steps/"+step
	b, err := json.Marshal(spec)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, inGraderFile), b, 0o644)
	}
	if err != nil {
		return "", true, err
	}
	self, err := os.Executable()
	if err != nil {
		return "", true, err
	}
	bin = filepath.Join(dir, "bin")
	if os.Link(self, bin) != nil && os.Symlink(self, bin) != nil {
		err = copyFile(self, bin)
	}
	return bin, true, err
}

// inGrader is what this binary plays when a command runs it as a learner's grader (nil: it runs
// as the lab's tests).
var inGrader = func() *inGraderSpec {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(os.Args[0]), inGraderFile))
	if err != nil {
		return nil
	}
	var s inGraderSpec
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}()

// learnerHere is the learner this binary plays as a grader, and its import path; outside a grader
// it skips t.
func learnerHere(t *testing.T) (*steps.Step, string) {
	if inGrader == nil {
		t.Skip("this binary plays a learner only as the grader lab grade and lab explore run (ingrader_test.go)")
	}
	st, err := catalog.Find(inGrader.Step)
	if err != nil {
		t.Fatal(err)
	}
	order := steps.DefaultOrder
	if inGrader.OwnOrder {
		order = st.Order
	}
	return &steps.Step{Slug: inGrader.Slug, Side: true, Nodes: inGrader.Nodes, New: st.New, Order: order, Needs: st.Needs}, inGrader.Pkg
}

// TestGrade is the grader's TestGrade (internal/matrix) in this binary run as a learner's grader.
func TestGrade(t *testing.T) {
	learner, pkg := learnerHere(t)
	out := os.Getenv(matrix.GradeOut)
	if out == "" {
		t.Fatalf("$%s must name the file the row goes to", matrix.GradeOut)
	}
	if err := matrix.Grade(learner, os.Getenv("LAB_REDIS"), pkg, inBubbles(t), out); err != nil {
		t.Fatal(err)
	}
}

// TestExplore is the grader's and the explorer's TestExplore (internal/matrix, internal/explore)
// in this binary run as a learner's grader.
func TestExplore(t *testing.T) {
	learner, pkg := learnerHere(t)
	if os.Getenv(explore.Env) == "" {
		t.Skip("lab grade and lab explore run this test with $" + explore.Env + " set")
	}
	if err := explore.Serve(learner, pkg, inBubbles(t)); err != nil {
		t.Fatal(err)
	}
}
