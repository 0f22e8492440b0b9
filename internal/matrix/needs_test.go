package matrix_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestGradeSkipsWhatTheServerLacks: a step that needs a command its backend's server does not
// run (Step.Needs) gets a row of skipped cells, each with the reason, from Row as from Grade:
// never a verdict, never a pass. The embedded backend runs DELEX, so side_delex itself plays
// there, and earns its row.
func TestGradeSkipsWhatTheServerLacks(t *testing.T) {
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	road, err := catalog.Find("side_delex")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := matrix.Play(road, steps.Failover, "", bubble)
	if err != nil {
		t.Fatalf("side_delex on the embedded backend: %v", err)
	}
	if want := road.Expect[steps.Failover]; !slices.Equal(rep.Violations, want) {
		t.Errorf("side_delex under failover on the embedded backend: %v; the matrix expects %v", rep.Violations, want)
	}

	st := *road
	st.Slug = "steps/mine"
	st.Needs = []steps.Need{{Command: "NOSUCHCMD", Since: "no release yet"}}
	out := filepath.Join(t.TempDir(), "row.json")
	if err := matrix.Grade(&st, "", "github.com/lockstep-lab/lockstep/steps/side_delex", bubble, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var g matrix.Graded
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g.Err != "" || g.Incomplete != 0 || len(g.Row) != len(scenario.Names()) {
		t.Fatalf("graded: error %q, %d incomplete, %d cells; want %d skipped cells", g.Err, g.Incomplete, len(g.Row), len(scenario.Names()))
	}
	for _, c := range g.Row {
		if c.Skipped == "" || len(c.Violations) > 0 {
			t.Errorf("%s: skipped %q, violations %v; want skipped", c.Scenario, c.Skipped, c.Violations)
			continue
		}
		for _, want := range []string{"steps/mine needs NOSUCHCMD (no release yet)", "embedded", "miniredis"} {
			if !strings.Contains(c.Skipped, want) {
				t.Errorf("%s: the reason %q does not say %q", c.Scenario, c.Skipped, want)
			}
		}
	}
	t.Log(g.Row[0].Skipped)
}
