package grading

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// Target is the row a learner aims for (lab grade -want): a step's expected row from the
// catalog, with the cells an exercise promises otherwise said cell by cell. Hazard: a target is
// met cell for cell, a cell without a verdict (?) included — unlike Like, which passes over the
// cells that were not judged.
type Target struct {
	Step *steps.Step
	// Cells are the scenarios whose verdict is not Step's: the kinds that break there (none: ✓),
	// or NoVerdict.
	Cells map[steps.Scenario][]steps.Kind
}

// NoVerdict stands, in a Target's cell, for a cell without a verdict (?): a fault that found
// nowhere to strike.
var NoVerdict = []steps.Kind{"?"}

// ParseTarget reads -want's value: a step as the catalog finds it (04, atomic_ttl,
// 04_atomic_ttl), then, comma-separated, any scenario=verdict where the exercise's row is not
// that step's; a verdict is ok (or ✓), ? (no verdict), or kinds joined by + (overlap+oversold).
// Every error is bad input, in one line.
func ParseTarget(find func(string) (*steps.Step, error), s string) (*Target, error) {
	parts := strings.Split(s, ",")
	st, err := find(strings.TrimSpace(parts[0]))
	if err != nil {
		return nil, usageError("-want %s: %v", s, err)
	}
	t := &Target{Step: st, Cells: map[steps.Scenario][]steps.Kind{}}
	for _, p := range parts[1:] {
		name, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		sc := steps.Scenario(name)
		if !ok || !slices.Contains(scenario.Names(), sc) {
			return nil, usageError("-want %s: %q is not scenario=verdict (a scenario of lab list scenarios; a verdict ok, ?, or kinds joined by +)", s, p)
		}
		if _, dup := t.Cells[sc]; dup {
			return nil, usageError("-want %s: %s given twice", s, sc)
		}
		switch v {
		case "ok", "✓":
			t.Cells[sc] = []steps.Kind{}
		case "?":
			t.Cells[sc] = NoVerdict
		default:
			var ks []steps.Kind
			for _, k := range strings.Split(v, "+") {
				if !slices.Contains(steps.Kinds, steps.Kind(k)) {
					return nil, usageError("-want %s: %q is no kind of violation (%s)", s, k, course.KindList(steps.Kinds))
				}
				ks = append(ks, steps.Kind(k))
			}
			t.Cells[sc] = ks
		}
	}
	return t, nil
}

// Want is the target's verdict under sc: the kinds that break there, or NoVerdict.
func (t *Target) Want(sc steps.Scenario) []steps.Kind {
	if ks, ok := t.Cells[sc]; ok {
		return ks
	}
	return t.Step.Expect[sc]
}

// String names the target in words: "step 5's row (Owner token: only the holder deletes)", and
// the cells it says otherwise: "…, but unlock-race ✓".
func (t *Target) String() string {
	s := fmt.Sprintf("%s's row (%s)", course.Name(t.Step), t.Step.Title)
	var but []string
	for _, sc := range scenario.Names() {
		if ks, ok := t.Cells[sc]; ok {
			but = append(but, string(sc)+" "+verdictText(ks, false))
		}
	}
	if len(but) > 0 {
		s += ", but " + strings.Join(but, ", ")
	}
	return s
}

// Miss is a cell of a learner's row that is not the target's.
type Miss struct {
	Scenario  steps.Scenario
	Got, Want string // each as the matrix prints a cell
	// Fix is what clears the kinds the learner's lock broke with there and the target does not
	// (the hand-off's words, from the step the lock breaks like under that scenario); "" when
	// there are none.
	Fix string
}

// Misses are the cells of row that are not t's, in the row's order. A skipped cell, or one
// without a verdict, misses unless the target's is NoVerdict too.
func (t *Target) Misses(all []*steps.Step, row []matrix.Cell) []Miss {
	var out []Miss
	near := Nearest(all, row, nil)
	for _, c := range row {
		sc := steps.Scenario(c.Scenario)
		want := t.Want(sc)
		none := c.Skipped != "" || len(c.Unjudged) > 0
		wantNone := slices.Equal(want, NoVerdict)
		if none && wantNone || !none && !wantNone && sameKinds(c.Violations, want) {
			continue
		}
		m := Miss{Scenario: sc, Got: verdictText(c.Violations, none), Want: verdictText(want, wantNone)}
		if c.Skipped != "" {
			m.Got = "skipped: " + c.Skipped
		} else if none {
			m.Got = "? (" + c.Why + ")"
		}
		if !none {
			extra := slices.DeleteFunc(slices.Clone(c.Violations), func(k steps.Kind) bool { return slices.Contains(want, k) })
			if len(extra) > 0 {
				m.Fix = WayOn(all, sc, extra, near)
			}
		}
		out = append(out, m)
	}
	return out
}

// WayOn is where a learner's lock that broke with kinds under sc goes next, as lab -dir says it
// after a break: the last step of the line that breaks so at or before the step the lock's row is
// nearest (near, an index of all; -1: none), and the first after it whose row clears them (the
// hand-off, course.NewHandoff, for a lock on no line).
func WayOn(all []*steps.Step, sc steps.Scenario, kinds []steps.Kind, near int) string {
	mine := &steps.Step{Slug: "your lock", Side: true}
	withMine := append(slices.Clone(all), mine)
	h := course.NewHandoffNear(withMine, len(withMine)-1, sc, kinds, mine, near)
	s := h.Headline(withMine)
	if h.Fix >= 0 {
		s += " Its code: steps/" + withMine[h.Fix].Slug + "."
	}
	return s
}

// sameKinds tells whether a and b hold the same kinds, in any order.
func sameKinds(a, b []steps.Kind) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// verdictText is a cell as the matrix prints it: ✓, the kinds, or ? (none: no verdict).
func verdictText(ks []steps.Kind, none bool) string {
	switch {
	case none || slices.Equal(ks, NoVerdict):
		return "?"
	case len(ks) == 0:
		return "✓"
	}
	return course.KindList(ks)
}
