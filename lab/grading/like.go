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
// Hazard: a cell without a verdict (`?`) matches no step and differs from none, so a row with
// `?` cells is like a step only on the cells it judged, and Like says how many it could not
// ("…cell for cell on the 3 of 14 it judged; 11 not judged"). A row with no judged cell, or no
// step within three cells of it, is like none (""); learner, the learner's own lock in the lab
// (or nil), has no row to be like. A skipped cell (the backend cannot stage it) is neither.
func Like(all []*steps.Step, row []matrix.Cell, learner *steps.Step) string {
	best, bestDiff, judged := nearest(all, row, learner)
	if best < 0 {
		return ""
	}
	unjudged := Unjudged(row)
	on := ""
	if unjudged > 0 {
		on = fmt.Sprintf(" on the %d of %d it judged; %d not judged", judged, judged+unjudged, unjudged)
	}
	switch st := all[best]; {
	case len(bestDiff) == 0:
		return fmt.Sprintf("Your lock's row is %s's (%s), cell for cell%s.", course.Name(st), st.Title, on)
	default:
		return fmt.Sprintf("Your lock's row is nearest %s's (%s)%s: it differs under %s.", course.Name(st), st.Title, on, strings.Join(bestDiff, ", "))
	}
}

// Nearest is the index in all of the step Like names for row, or -1 when it names none.
func Nearest(all []*steps.Step, row []matrix.Cell, learner *steps.Step) int {
	best, _, _ := nearest(all, row, learner)
	return best
}

// nearest is Like's step (-1: none), the scenarios the row differs from it under, and how many
// cells were judged.
func nearest(all []*steps.Step, row []matrix.Cell, learner *steps.Step) (int, []string, int) {
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
		return -1, nil, judged
	}
	return best, bestDiff, judged
}

// Unjudged counts the row's cells that were played and reached no verdict (`?`): a cell the
// backend could not stage is skipped, not unjudged.
func Unjudged(row []matrix.Cell) int {
	n := 0
	for _, c := range row {
		if c.Skipped == "" && len(c.Unjudged) > 0 {
			n++
		}
	}
	return n
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

// Near is a step of the catalog and the scenarios under which a learner's row is not its
// (DiffersUnder: a cell without a verdict differs from none).
type Near struct {
	Step *steps.Step
	Diff []string
}

// NearestRows is every step of all that has a row, the nearest to row first (the fewest cells
// that differ; among equals, all's order).
func NearestRows(all []*steps.Step, row []matrix.Cell) []Near {
	var out []Near
	for _, st := range all {
		if st.Expect == nil {
			continue
		}
		diff, _ := DiffersUnder(st, row)
		out = append(out, Near{st, diff})
	}
	slices.SortStableFunc(out, func(a, b Near) int { return len(a.Diff) - len(b.Diff) })
	return out
}
