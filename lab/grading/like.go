package grading

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// Like says which step of the catalog the row is like: the first whose expected row is the
// same in every cell that was judged, or else the nearest and the scenarios it differs under.
// A row with no judged cell, or no step within three cells of it, is like none (""); learner,
// the learner's own lock in the lab (or nil), has no row to be like.
func Like(all []*steps.Step, row []matrix.Cell, learner *steps.Step) string {
	best, bestDiff := -1, []string(nil)
	judged := 0
	for i, st := range all {
		if st == learner { // the learner's own lock in the lab has no row to be like
			continue
		}
		var diff []string
		diff, judged = DiffersUnder(st, row)
		if best < 0 || len(diff) < len(bestDiff) {
			best, bestDiff = i, diff
		}
	}
	if best < 0 || judged == 0 || len(bestDiff) > 3 {
		return ""
	}
	switch st := all[best]; {
	case len(bestDiff) == 0:
		return fmt.Sprintf("Your lock's row is %s's (%s), cell for cell.", course.Name(st), st.Title)
	default:
		return fmt.Sprintf("Your lock's row is nearest %s's (%s): it differs under %s.", course.Name(st), st.Title, strings.Join(bestDiff, ", "))
	}
}

// DiffersUnder lists the scenarios under which row's verdict is not st's expected one, and how
// many of row's cells were judged: a skipped cell, or one without a verdict, is like any.
func DiffersUnder(st *steps.Step, row []matrix.Cell) (diff []string, judged int) {
	for _, c := range row {
		if c.Skipped != "" || len(c.Unjudged) > 0 {
			continue
		}
		judged++
		want := slices.Clone(st.Expect[steps.Scenario(c.Scenario)])
		got := slices.Clone(c.Violations)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(want, got) {
			diff = append(diff, c.Scenario)
		}
	}
	return diff, judged
}
