package course

import (
	"context"
	"io/fs"
	"slices"
	"strings"

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

// NearestBySource is the index in all of the step whose source is nearest learner's: the fewest
// lines of its files (by name) that one has and the other does not; -1 when none shares a file.
// The terminal lab knows no row of a learner's lock (lab grade does): where its way on needs the
// step the lock grew from, a copy of 09 is 09 by its lines, as its grade finds it by its row.
func NearestBySource(all []*steps.Step, learner *steps.Step) int {
	if learner == nil || learner.Source == nil {
		return -1
	}
	mine := sourceLines(learner.Source)
	best, bestN := -1, 0
	for i, st := range all {
		if st == learner || st.Source == nil {
			continue
		}
		theirs := sourceLines(st.Source)
		n, shared := 0, false
		for name, ls := range mine {
			t, ok := theirs[name]
			if !ok {
				continue
			}
			shared = true
			n += lineDistance(ls, t)
		}
		if shared && (best < 0 || n < bestN) {
			best, bestN = i, n
		}
	}
	return best
}

// sourceLines is each Go or Lua file of src, its lines trimmed, by name.
func sourceLines(src fs.FS) map[string][]string {
	out := map[string][]string{}
	entries, _ := fs.ReadDir(src, ".")
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), ".lua")) || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := fs.ReadFile(src, e.Name())
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				out[e.Name()] = append(out[e.Name()], l)
			}
		}
	}
	return out
}

// lineDistance is how many lines a has that b does not, and b that a does not, counted as
// multisets.
func lineDistance(a, b []string) int {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	n := 0
	for _, c := range count {
		n += max(c, -c)
	}
	return n
}
