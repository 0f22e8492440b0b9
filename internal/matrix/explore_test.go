package matrix_test

import (
	"os"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/explore"
)

// TestExplore explores the learner's lock for lab grade, in the grader that played its row
// (explore.Serve, as internal/explore's TestExplore does for lab explore): the lock laid over this
// binary is explored without a second build.
func TestExplore(t *testing.T) {
	if os.Getenv(explore.Env) == "" {
		t.Skip("lab grade runs this test with $" + explore.Env + " set")
	}
	if err := explore.Serve(learner, learnerPkg, func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }); err != nil {
		t.Fatal(err)
	}
}
