package matrix_test

import (
	"encoding/json"
	"os"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// learner is the lock lab grade plays, and learnerPkg its import path. The file lab grade lays
// over this package (zz_learner_test.go, which must not exist on disk) sets them in its init; in
// the repository nothing does, and TestGrade skips.
var (
	learner    *steps.Step
	learnerPkg string
)

// TestGrade plays the learner's row for lab grade (matrix.Grade): every cell on the embedded
// backend in a testing/synctest bubble of its own.
func TestGrade(t *testing.T) {
	if learner == nil {
		t.Skip("no learner's lock: lab grade DIR lays one over this package")
	}
	out := os.Getenv(matrix.GradeOut)
	if out == "" {
		t.Fatalf("$%s must name the file the row goes to", matrix.GradeOut)
	}
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	if err := matrix.Grade(learner, os.Getenv("LAB_REDIS"), learnerPkg, bubble, out); err != nil {
		t.Fatal(err)
	}
}

// TestPlay plays the cells lab run and lab matrix ask for (matrix.PlayCells): the file $LOCKSTEP_PLAY
// names lists them, and every cell of the embedded backend plays in a testing/synctest bubble of
// its own. A step's slug is the catalog's, or the learner's in a grader built by a lab that lab
// -dir built. Without $LOCKSTEP_PLAY it skips.
func TestPlay(t *testing.T) {
	in := os.Getenv(matrix.PlayIn)
	if in == "" {
		t.Skipf("no cells to play: lab run and lab matrix name them in $%s", matrix.PlayIn)
	}
	out := os.Getenv(matrix.GradeOut)
	if out == "" {
		t.Fatalf("$%s must name the file the plays go to", matrix.GradeOut)
	}
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	var want []matrix.Want
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("$%s: %v", matrix.PlayIn, err)
	}
	find := func(slug string) (*steps.Step, error) {
		if learner != nil && slug == learner.Slug {
			return learner, nil
		}
		return catalog.Find(slug)
	}
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	if err := matrix.PlayCells(want, os.Getenv("LAB_REDIS"), bubble, find, out); err != nil {
		t.Fatal(err)
	}
}
