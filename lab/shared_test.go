package main

import (
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lock whose state lives at package level, shared by every buyer the lab plays in one process.

// TestGradeSaysSharedState: a lock whose state lives at package level — a reentrancy map, an
// owner token drawn once at init — is shared by every buyer the lab plays in its one process, as
// it would not be in a deployment: the grade says so in one line, in the terminal and on the
// page, and judges the run as it was played (the shared token lets every buyer release every
// other's lock: foreign-release under slow).
func TestGradeSaysSharedState(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	for _, tc := range []struct {
		learner, line, broke string
	}{
		{"package_holds", "Note: package-level `holds` (written by Locker.Lock) is shared by every buyer here; in a deployment each process has its own — keep per-process state in the Locker.", ""},
		{"package_token", "Note: package-level `owner` (drawn once at init, read by Locker.Lock) is shared by every buyer here; in a deployment each process has its own — keep per-process state in the Locker.", "foreign-release"},
	} {
		t.Run(tc.learner, func(t *testing.T) {
			t.Parallel()
			page := filepath.Join(t.TempDir(), "grade.html")
			code, out, errs := grade(t, copyLearner(t, tc.learner), "-html", page)
			if code != 1 || strings.Count(out, "\n"+tc.line+"\n") != 1 {
				t.Fatalf("exit %d, want 1 and the line %q once\n%s\n%s", code, tc.line, out, errs)
			}
			b, err := os.ReadFile(page)
			if err != nil {
				t.Fatal(err)
			}
			onPage := strings.TrimSuffix(strings.TrimPrefix(tc.line, "Note: "), ".")
			if !strings.Contains(html.UnescapeString(string(b)), `<p class="shared">`+onPage+`</p>`) {
				t.Errorf("the page does not say %q", onPage)
			}
			if tc.broke != "" && !strings.Contains(out, tc.broke) {
				t.Errorf("the grade does not find %s:\n%s", tc.broke, out)
			}
		})
	}
}
