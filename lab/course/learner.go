package course

import (
	"context"
	"io/fs"
	"slices"

	"github.com/lockstep-lab/lockstep/steps"
)

// LearnerStep is a learner's lock as the lab shows it (lab -dir): a side road at the end of the
// picker, in the package slug, with its code in src. order nil means the package has no Order:
// steps.DefaultOrder (step 03's try/finally handler) places its orders. shared is what its
// package-level state every simulated buyer shares says (grading.Shared), a line each: its claim
// begins with them. Hazard: the step has no row of the matrix (Expect is nil); its breaks are
// found by playing.
func LearnerStep(slug string, nodes int, newFn func(steps.Proc) steps.Locker,
	order func(context.Context, steps.Locker, steps.Shop) error, src fs.FS, shared []string) *steps.Step {
	if order == nil {
		order = steps.DefaultOrder
	}
	st := &steps.Step{
		Slug: slug, Side: true, Nodes: nodes,
		Title:   "The lock in " + slug,
		Claim:   "The lock in " + slug + ", played against every scenario as the steps are.",
		Article: "yours",
		Fixes:   "What you changed.",
		Breaks:  "Whatever the referee finds: go run ./lab grade " + slug + " plays every scenario.",
		Hint:    "Inject each fault into the holder, or grade it headless.",
		Lesson:  "The referee's sentence above says what happened; below, the steps of the line that clear it.",
		New:     newFn, Order: order, Source: src,
	}
	for _, s := range slices.Backward(shared) {
		st.Claim = "Note: " + s + ". " + st.Claim
	}
	return st
}
