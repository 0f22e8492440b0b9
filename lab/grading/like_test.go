package grading

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestLikeStep: a graded row is named after the step whose expected row it is, cell for cell;
// one cell off names the nearest step and the scenario it differs under; a row unlike every step,
// or with nothing judged, names none.
func TestLikeStep(t *testing.T) {
	all := catalog.Steps
	rowOf := func(st *steps.Step) []matrix.Cell {
		var row []matrix.Cell
		for _, sc := range scenario.Names() {
			row = append(row, matrix.Cell{Scenario: string(sc), Violations: st.Expect[sc]})
		}
		return row
	}
	st9 := all[course.ByNumber(all, 9)]
	if got := Like(all, rowOf(st9), nil); !strings.HasPrefix(got, "Your lock's row is step 9's (") {
		t.Errorf("09's own row: %q", got)
	}
	// the learner's own lock has no row of its own: its empty Expect is no row to be like (first
	// in the list here, so that it would win if it were looked at)
	mine := &steps.Step{Slug: "steps/mine", Side: true}
	withMine := append([]*steps.Step{mine}, all...)
	if got := Like(withMine, rowOf(mine), mine); strings.Contains(got, "steps/mine") || !strings.Contains(got, "step 17's (") {
		t.Errorf("an empty row, the learner's own lock among the steps: %q", got)
	}
	row := rowOf(st9)
	row[0].Violations = append(slices.Clone(row[0].Violations), steps.Stuck)
	if got := Like(all, row, nil); !strings.Contains(got, "nearest step 9's") || !strings.HasSuffix(got, "differs under "+row[0].Scenario+".") {
		t.Errorf("09's row with one cell off: %q", got)
	}
	odd := rowOf(st9)
	for i := range odd {
		odd[i].Violations = []steps.Kind{steps.Stuck, steps.Overlap, steps.Starved, steps.LostSales}
	}
	if got := Like(all, odd, nil); got != "" {
		t.Errorf("a row like no step: %q", got)
	}
	// a row with `?` cells is like a step only on the cells it judged, and says how many it could
	// not: 3 of 09's cells judged, the rest `?`
	guess := rowOf(st9)
	for i := 3; i < len(guess); i++ {
		guess[i].Unjudged, guess[i].Violations = []steps.Kind{steps.Overlap}, nil
	}
	want := fmt.Sprintf(", cell for cell on the 3 of %d it judged; %d not judged.", len(guess), len(guess)-3)
	if got := Like(all, guess, nil); !strings.HasSuffix(got, want) {
		t.Errorf("3 cells judged, the rest '?': %q, want it to end %q", got, want)
	}
	guess[0].Violations = append(slices.Clone(guess[0].Violations), steps.Stuck)
	want = fmt.Sprintf(" on the 3 of %d it judged; %d not judged: it differs under %s.", len(guess), len(guess)-3, guess[0].Scenario)
	if got := Like(all, guess, nil); !strings.Contains(got, "nearest") || !strings.HasSuffix(got, want) {
		t.Errorf("3 cells judged, one off, the rest '?': %q, want it to end %q", got, want)
	}
	// a skipped cell is neither judged nor a guess
	skipped := rowOf(st9)
	skipped[0].Skipped, skipped[0].Violations = "the backend cannot stage it", nil
	if got := Like(all, skipped, nil); !strings.HasSuffix(got, "), cell for cell.") {
		t.Errorf("one cell skipped, the rest judged: %q", got)
	}
	none := rowOf(st9)
	for i := range none {
		none[i].Unjudged, none[i].Violations = []steps.Kind{steps.Overlap}, nil
	}
	if got := Like(all, none, nil); got != "" {
		t.Errorf("nothing judged: %q", got)
	}
}
