package matrix_test

import (
	"os"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestDrive plays drive sessions for lab drive and the terminal lab's drive mode (drive.Serve):
// the requests on stdin, the replies on stdout, each session in a testing/synctest bubble of its
// own, so that its clock stands still between moves. Without $LOCKSTEP_DRIVE it skips.
func TestDrive(t *testing.T) {
	if os.Getenv(drive.Env) == "" {
		t.Skip("lab drive runs this test with $" + drive.Env + " set, its moves on stdin")
	}
	find := func(slug string) (*steps.Step, error) {
		if learner != nil && slug == learner.Slug {
			return learner, nil
		}
		return catalog.Find(slug)
	}
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	if err := drive.Serve(os.Stdin, os.Stdout, find, bubble, synctest.Wait); err != nil {
		t.Fatal(err)
	}
}
