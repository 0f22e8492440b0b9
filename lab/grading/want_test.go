package grading

import (
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// rowOf is the row the catalog expects of the step named s, as a grade would have played it.
func rowOf(t *testing.T, s string) []matrix.Cell {
	t.Helper()
	st, err := catalog.Find(s)
	if err != nil {
		t.Fatal(err)
	}
	var row []matrix.Cell
	for _, sc := range scenario.Names() {
		row = append(row, matrix.Cell{Scenario: string(sc), Violations: st.Expect[sc]})
	}
	return row
}

// TestTargetMisses: a step's own row meets the step as a target; another step's row misses it
// under exactly the scenarios where the catalog's two rows differ, each named with both verdicts,
// and a kind the target does not break with is followed by the step that clears it; a cell
// without a verdict misses a target that has one, and meets one that promises none.
func TestTargetMisses(t *testing.T) {
	four, err := ParseTarget(catalog.Find, "04")
	if err != nil {
		t.Fatal(err)
	}
	if m := four.Misses(catalog.Steps, rowOf(t, "04")); len(m) != 0 {
		t.Errorf("04's row misses 04: %+v", m)
	}
	st4, _ := catalog.Find("04")
	st9, _ := catalog.Find("09")
	var want []steps.Scenario
	for _, sc := range scenario.Names() {
		if !sameKinds(st4.Expect[sc], st9.Expect[sc]) {
			want = append(want, sc)
		}
	}
	misses := four.Misses(catalog.Steps, rowOf(t, "09"))
	var got []steps.Scenario
	for _, m := range misses {
		got = append(got, m.Scenario)
		if m.Got != verdictText(st9.Expect[m.Scenario], false) || m.Want != verdictText(st4.Expect[m.Scenario], false) {
			t.Errorf("under %s: got %q, want %q", m.Scenario, m.Got, m.Want)
		}
		if m.Scenario == steps.Load && (!strings.Contains(m.Fix, "step 10") || !strings.Contains(m.Fix, "steps/10_retry_jitter")) {
			// 09 floods under load, 04 does not: the back-off of step 10 clears flood
			t.Errorf("under load, the way on does not name step 10 and its folder: %q", m.Fix)
		}
		if m.Scenario == steps.Slow && m.Fix != "" {
			t.Errorf("under slow 09 breaks with nothing 04 does not: %q", m.Fix)
		}
	}
	if len(got) == 0 || strings.Join(scNames(got), ",") != strings.Join(scNames(want), ",") {
		t.Errorf("09's row misses 04 under %v, want %v", got, want)
	}
	row := rowOf(t, "05")
	for i := range row {
		if row[i].Scenario == string(steps.UnlockRace) {
			row[i].Violations = nil
		}
	}
	cad, err := ParseTarget(catalog.Find, "05,unlock-race=ok")
	if err != nil {
		t.Fatal(err)
	}
	if m := cad.Misses(catalog.Steps, row); len(m) != 0 {
		t.Errorf("05 with an atomic unlock misses %s: %+v", cad, m)
	}
	if m := four.Misses(catalog.Steps, row); len(m) == 0 {
		t.Errorf("05 with an atomic unlock meets %s", four)
	}
	row[0].Unjudged, row[0].Why = []steps.Kind{steps.Overlap}, "the fault found nowhere to strike"
	if m := cad.Misses(catalog.Steps, row); len(m) != 1 || m[0].Got != "? (the fault found nowhere to strike)" {
		t.Errorf("a cell without a verdict: %+v", m)
	}
	none, err := ParseTarget(catalog.Find, "05,unlock-race=ok,"+row[0].Scenario+"=?")
	if err != nil {
		t.Fatal(err)
	}
	if m := none.Misses(catalog.Steps, row); len(m) != 0 {
		t.Errorf("a target that promises no verdict: %+v", m)
	}
	if s := none.String(); !strings.HasPrefix(s, "step 5's row (") || !strings.HasSuffix(s, "), but contention ?, unlock-race ✓") {
		t.Errorf("the target in words: %q", s)
	}
}

// TestParseTargetBadInput: every -want that names no step, no scenario or no kind is bad input.
func TestParseTargetBadInput(t *testing.T) {
	for _, s := range []string{"99", "04,slow", "04,nope=ok", "04,slow=overlap+nope", "04,slow=ok,slow=?"} {
		if _, err := ParseTarget(catalog.Find, s); err == nil || !strings.Contains(err.Error(), "-want "+s) {
			t.Errorf("-want %s: %v", s, err)
		}
	}
	tg, err := ParseTarget(catalog.Find, "04_atomic_ttl, slow=overlap+oversold")
	if err != nil || !sameKinds(tg.Want(steps.Slow), []steps.Kind{steps.Oversold, steps.Overlap}) {
		t.Errorf("a cell of kinds: %v %v", tg, err)
	}
}

func scNames(scs []steps.Scenario) []string {
	var out []string
	for _, sc := range scs {
		out = append(out, string(sc))
	}
	return out
}

// TestWayOnFromTheNearestRow: a lock whose row is nearest step 9's and that starves under greedy
// breaks as step 9 does, and step 14 clears it (the line does not break monotonically: 15 starves
// again, and the last step anywhere that starves sent it to 16). With no row known, the fix is
// sought after the last step that breaks so, and no step is named as the one it breaks like.
func TestWayOnFromTheNearestRow(t *testing.T) {
	i09 := course.ByNumber(catalog.Steps, 9)
	for _, c := range []struct {
		sc    steps.Scenario
		kinds []steps.Kind
		near  int
		want  []string
	}{
		{steps.Greedy, []steps.Kind{steps.Starved}, i09, []string{"breaks as step 9 ", "the fix is step 14 ", "steps/14_fair."}},
		{steps.Pause, []steps.Kind{steps.Overlap, steps.Oversold}, i09, []string{"breaks as step 9 ", "step 16 ", "the fix is step 17 "}},
		{steps.Slow, []steps.Kind{steps.Overlap, steps.Oversold}, i09, []string{"breaks as step 7 ", "the fix is step 8 "}},
		{steps.Greedy, []steps.Kind{steps.Starved}, -1, []string{"fix is step 16 "}},
	} {
		got := WayOn(catalog.Steps, c.sc, c.kinds, c.near)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %v near %d: %q lacks %q", c.sc, c.kinds, c.near, got, w)
			}
		}
		if c.near < 0 && strings.Contains(got, "breaks as") {
			t.Errorf("with no row known, the way on names a step it breaks as: %q", got)
		}
	}
}
