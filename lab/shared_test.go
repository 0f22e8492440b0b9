package main

import (
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/lab/grading"
)

// A lock whose state lives at package level, shared by every buyer the lab plays in one process.

// TestGradeSaysSharedState: a lock whose state lives at package level — a reentrancy map, an
// owner token drawn once at init — would be shared by every buyer the lab plays in its one
// process, as it would not be in a deployment. The grade plays each buyer on a copy of the
// package of its own (steps.Step.PerProcess), and says so in one line a variable, in the terminal
// and on the page. Shared, the token made every buyer the owner of every lock (foreign-release
// under slow), and the map let every buyer re-enter every other's lock (the row "nearest step 1");
// per process, neither: the token's lock is step 09's under slow, the map's is nearest step 6.
func TestGradeSaysSharedState(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	for _, tc := range []struct {
		learner     string
		shared      []grading.Shared
		says, never string
	}{
		{"package_holds", []grading.Shared{{Name: "holds", How: "written by Locker.Lock"}, {Name: "mu", How: "written by Locker.Lock"}}, "Your lock's row is nearest step 6's", "nearest step 1"},
		{"package_token", []grading.Shared{{Name: "owner", How: "drawn once at init, read by Locker.Lock"}}, "  slow          overlap, oversold\n", "foreign-release"},
	} {
		t.Run(tc.learner, func(t *testing.T) {
			t.Parallel()
			page := filepath.Join(t.TempDir(), "grade.html")
			code, out, errs := grade(t, sharedLearner(t, tc.learner), "-html", page)
			if code != 1 || !strings.Contains(out, tc.says) || strings.Contains(out, tc.never) {
				t.Fatalf("exit %d, want 1, saying %q and never %q\n%s\n%s", code, tc.says, tc.never, out, errs)
			}
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			for _, sh := range tc.shared {
				line := "Note: " + sh.PerProcessSays() + "."
				if strings.Count(out, "\n"+line+"\n") != 1 {
					t.Errorf("the grade does not say once %q:\n%s", line, out)
				}
				if !strings.Contains(html.UnescapeString(string(b)), `<p class="shared">`+sh.PerProcessSays()+`</p>`) {
					t.Errorf("the page does not say %q", sh.PerProcessSays())
				}
			}
		})
	}
}
