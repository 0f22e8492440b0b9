package course

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// Said is a finished run's verdict as every screen says it: the terminal's INVARIANTS line once
// the run is over and the page's verdict box take it from here, so they cannot say two things.
// Hazard: a kind the scenario does not judge is no violation of the run; it is only ever said as
// Also ("also seen, not judged by …"), never flagged ✗.
type Said struct {
	Mark  string // ✓, ✗ or ?
	Class string // ok, bad or unknown (the page's classes, as CellClass)
	// Line is the verdict in one line: "✓ none of stuck happened" when every judged kind held (one
	// ✓), else each judged kind flagged: "✗ overlap ✗ oversold ✓ foreign-release", "? idle".
	Line  string
	Flags []Flag
	// Also is the kinds seen that the scenario does not judge; AlsoLine says them ("" if none).
	Also     []steps.Kind
	AlsoLine string
}

// Flag is one judged kind's verdict: ✗ violated, ? not judged (the referee could not see it), ✓
// held.
type Flag struct {
	Kind steps.Kind
	Mark string
}

// String is "✗ overlap".
func (f Flag) String() string { return f.Mark + " " + string(f.Kind) }

// SaidOf is rep's verdict as every screen says it.
func SaidOf(rep *referee.Report) Said {
	s := Said{Mark: "✓", Class: "ok"}
	switch {
	case !rep.Complete():
		s.Mark, s.Class = "?", "unknown"
	case len(rep.Violations) > 0:
		s.Mark, s.Class = "✗", "bad"
	}
	var flags []string
	for _, k := range rep.Judged {
		f := Flag{Kind: k, Mark: "✓"}
		switch {
		case slices.Contains(rep.Violations, k):
			f.Mark = "✗"
		case slices.Contains(rep.Unjudged, k):
			f.Mark = "?"
		}
		s.Flags = append(s.Flags, f)
		flags = append(flags, f.String())
	}
	s.Line = strings.Join(flags, " ")
	if s.Class == "ok" {
		s.Line = fmt.Sprintf("✓ none of %s happened", KindList(rep.Judged))
	}
	s.Also = rep.AlsoSeen()
	if len(s.Also) > 0 {
		s.AlsoLine = fmt.Sprintf("also seen, not judged by %s: %s", rep.Scenario, KindList(s.Also))
	}
	return s
}
