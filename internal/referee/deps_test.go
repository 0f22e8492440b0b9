package referee

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRefereeIsPure: the referee is a function of a history — it imports nothing of Redis, the
// arena or the backends, directly or through another package, and reads no clock (time.Now,
// time.Since, timers): a saved history is judged the same anywhere, any time.
func TestRefereeIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"redis", "/internal/arena", "/internal/redisenv", "/internal/scenario", "lockstep/steps"} {
			if strings.Contains(dep, bad) {
				t.Errorf("the referee depends on %s", dep)
			}
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{"time.Now(", "time.Since(", "time.Until(", "time.Sleep(", "time.After(", "time.NewTimer(", "time.NewTicker(", "time.Tick("} {
			if strings.Contains(string(src), c) {
				t.Errorf("%s reads the clock (%s)", f, c)
			}
		}
	}
}
