// Package course is the steps as a course: the numbered line, where each step grew from, and
// which step fixes what broke one (the hand-off). Everything here is read from the catalog's
// descriptors, never written down twice; the terminal lab, the headless commands, grade and the
// pages all say the way on with it.
package course

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/steps"
)

// Numbered tells whether st is on the numbered line: not a side road (Side, Number 0).
func Numbered(st *steps.Step) bool { return !st.Side && st.Number > 0 }

// TakesNoLock tells whether st takes no lock at all (step 1, the endpoint the articles start
// from): faults aimed at a lock have nothing to act on.
func TakesNoLock(st *steps.Step) bool { return st.NoLock }

// Last is the highest step number of the line.
func Last(all []*steps.Step) int {
	n := 0
	for _, st := range all {
		n = max(n, st.Number)
	}
	return n
}

// ByNumber is the index of step number n, or -1.
func ByNumber(all []*steps.Step, n int) int {
	for i, st := range all {
		if Numbered(st) && st.Number == n {
			return i
		}
	}
	return -1
}

// Name is how the lab names a step in a sentence: "step 4", or a side road's slug.
func Name(st *steps.Step) string {
	if Numbered(st) {
		return fmt.Sprintf("step %d", st.Number)
	}
	return st.Slug
}

// Title is Name at the start of a sentence: "Step 4", a side road's slug as it is.
func Title(st *steps.Step) string {
	if Numbered(st) {
		return upper(Name(st))
	}
	return Name(st)
}

// BaseOf is the index of the step that all[i] grew from (its Base: its code pane diffs against
// it), or -1 for the first, or a base the catalog does not hold.
func BaseOf(all []*steps.Step, i int) int {
	if b := all[i].Base; b != "" {
		for j, st := range all {
			if st.Slug == b {
				return j
			}
		}
	}
	return -1
}

// NextOf is the index of the numbered step after all[i] on the line (a side road's next is the
// step after its base's), or -1 after the last.
func NextOf(all []*steps.Step, i int) int {
	n := all[i].Number
	if !Numbered(all[i]) {
		if b := BaseOf(all, i); b >= 0 {
			n = all[b].Number
		}
	}
	return ByNumber(all, n+1)
}

// Extends tells whether typed is the start of a longer step number: with steps 10–17, "1" may
// still become 10–17.
func Extends(all []*steps.Step, typed string) bool {
	for _, st := range all {
		s := strconv.Itoa(st.Number)
		if Numbered(st) && len(s) > len(typed) && strings.HasPrefix(s, typed) {
			return true
		}
	}
	return false
}

// Handoff is where the lab sends a learner after a scenario broke a step: the next step, and the
// first later step whose row of the matrix (its Expect) clears every kind that broke this one
// under that scenario — the fix. The next step is called the fix only when it is.
type Handoff struct {
	From     int            // the broken step's index
	Scenario steps.Scenario // the scenario that broke it
	Kinds    []steps.Kind   // the kinds it broke with
	Next     int            // the next step's index, -1 after the last
	Clears   []steps.Kind   // of Kinds, those the next step's row clears under Scenario
	// Fix is the first later numbered step that clears every kind, -1 if none; for a side road
	// that broke what its base holds, the base (Base): the way on is back, and no screen calls a
	// later step the fix then.
	Fix int
	// Part is the first later numbered step before the fix, other than the next one, that clears
	// some of the kinds the next one does not (fencing tokens clear oversold under pause, not
	// overlap), -1 if none; its kinds are PartKinds.
	Part      int
	PartKinds []steps.Kind
	// Base is a side road's base when its row clears every kind (the road left a cure behind),
	// -1 otherwise.
	Base int
	// Like is, for the learner's own lock, the step of the line it broke like (likeOf; the fix is
	// sought after it), -1 otherwise. Only a grade, which knows the lock's whole row, names it
	// (Named): the terminal lab knows one cell, and "as step 15 does" of a copy of 09 there said
	// another step than the grade's "as step 9 does".
	Like  int
	Named bool
}

// NewHandoff works out the hand-off after all[i] broke with kinds under sc; learner is the
// learner's own lock (lab -dir, lab grade), on no line, or nil.
func NewHandoff(all []*steps.Step, i int, sc steps.Scenario, kinds []steps.Kind, learner *steps.Step) *Handoff {
	return NewHandoffNear(all, i, sc, kinds, learner, -1)
}

// NewHandoffNear is NewHandoff for a learner's lock whose whole row is known: near is the index
// in all of the step that row is nearest (grading.Nearest; -1: none).
func NewHandoffNear(all []*steps.Step, i int, sc steps.Scenario, kinds []steps.Kind, learner *steps.Step, near int) *Handoff {
	h := &Handoff{From: i, Scenario: sc, Kinds: kinds, Next: NextOf(all, i), Fix: -1, Part: -1, Base: -1, Like: -1}
	if learner != nil && all[i] == learner {
		// The learner's own lock is on no line: it broke as a step that breaks with every one of
		// these kinds under sc, and the fix is sought after that one (likeOf).
		h.Next = -1
		h.Like, h.Named = likeOf(all, near, sc, kinds), near >= 0
	}
	if h.Next >= 0 {
		for _, k := range kinds {
			if !slices.Contains(all[h.Next].Expect[sc], k) {
				h.Clears = append(h.Clears, k)
			}
		}
	}
	from := all[i].Number
	if !Numbered(all[i]) {
		if b := BaseOf(all, i); b >= 0 {
			from = all[b].Number
		}
	}
	if h.Like >= 0 {
		from = all[h.Like].Number
	}
	// The fix is the first step of the line after this one that clears every kind, in the
	// line's order (the steps' numbers), whatever the catalog's order; on the way, the first that
	// clears some of them (other than the next one, which the sentence names anyway).
	for n := from + 1; n <= Last(all) && h.Fix < 0; n++ {
		j := ByNumber(all, n)
		if j < 0 {
			continue
		}
		left := slices.DeleteFunc(slices.Clone(kinds), func(k steps.Kind) bool { return !slices.Contains(all[j].Expect[sc], k) })
		switch {
		case len(left) == 0:
			h.Fix = j
		case len(left) < len(kinds) && h.Part < 0 && j != h.Next:
			cleared := slices.DeleteFunc(slices.Clone(kinds), func(k steps.Kind) bool { return slices.Contains(left, k) })
			if slices.ContainsFunc(cleared, func(k steps.Kind) bool { return !slices.Contains(h.Clears, k) }) {
				h.Part, h.PartKinds = j, cleared // it clears something the next step does not
			}
		}
	}
	if b := BaseOf(all, i); b >= 0 && !Numbered(all[i]) &&
		!slices.ContainsFunc(kinds, func(k steps.Kind) bool { return slices.Contains(all[b].Expect[sc], k) }) {
		h.Base, h.Fix, h.Part = b, b, -1
	}
	return h
}

// likeOf is the step of the line a learner's lock broke like, with kinds under sc: the last that
// breaks so at or before all[near], the step its row is nearest, else (near -1: no row known, as
// in the terminal lab) the last that breaks so anywhere. Hazard: the line does not break monotonically (14 clears
// starved, 15 starves again): the last step anywhere that breaks so sent a copy of 09 that
// starved past 14 to 16.
func likeOf(all []*steps.Step, near int, sc steps.Scenario, kinds []steps.Kind) int {
	breaks := func(st *steps.Step) bool {
		return !slices.ContainsFunc(kinds, func(k steps.Kind) bool { return !slices.Contains(st.Expect[sc], k) })
	}
	if near >= 0 {
		ceiling := all[near].Number
		if !Numbered(all[near]) {
			if b := BaseOf(all, near); b >= 0 {
				ceiling = all[b].Number
			}
		}
		like := -1
		for n := 1; n <= ceiling; n++ {
			if j := ByNumber(all, n); j >= 0 && breaks(all[j]) {
				like = j
			}
		}
		if like >= 0 {
			return like
		}
	}
	like := -1
	for n := 1; n <= Last(all); n++ {
		if j := ByNumber(all, n); j >= 0 && breaks(all[j]) {
			like = j
		}
	}
	return like
}

// JumpKey is the key that opens step i: → for the step after the broken one in the catalog (what
// → opens), else its number.
func (h *Handoff) JumpKey(all []*steps.Step, i int) string {
	if i == h.From+1 {
		return "→"
	}
	return strconv.Itoa(all[i].Number)
}

// Sentence says where to go, in words: the fix and how to reach it, or that no step clears it.
func (h *Handoff) Sentence(all []*steps.Step) string { return h.say(all, true) }

// Headline says where the fix is, for a report read away from the lab's keys.
func (h *Handoff) Headline(all []*steps.Step) string { return h.say(all, false) }

// say is the hand-off in words; keys says how to open the steps it names with the lab's keys.
func (h *Handoff) say(all []*steps.Step, keys bool) string {
	kinds := KindList(h.Kinds)
	press := func(i int) string {
		if !keys {
			return ""
		}
		return ": press " + h.JumpKey(all, i) + " for its diff"
	}
	if h.Base >= 0 {
		// the side road broke what its base holds: the way on is back to the base
		b := all[h.Base]
		s := fmt.Sprintf("The fix is to go back: its base, %s (%s), does not break under %s", Name(b), b.Title, h.Scenario)
		if keys {
			s += " (press " + h.JumpKey(all, h.Base) + ")"
		}
		return s + "."
	}
	var parts []string
	if h.Like >= 0 && h.Named {
		lk := all[h.Like]
		parts = append(parts, fmt.Sprintf("under %s it breaks as %s (%s) does", h.Scenario, Name(lk), lk.Title))
	}
	if h.Next >= 0 && h.Next != h.Fix {
		nx := all[h.Next]
		now := fmt.Sprintf("%s does not clear %s under %s", Name(nx), kinds, h.Scenario)
		if len(h.Clears) > 0 {
			left := slices.DeleteFunc(slices.Clone(h.Kinds), func(k steps.Kind) bool { return slices.Contains(h.Clears, k) })
			now = fmt.Sprintf("%s clears %s, not %s", Name(nx), KindList(h.Clears), KindList(left))
		}
		parts = append(parts, now)
	}
	if h.Part >= 0 {
		pt := all[h.Part]
		parts = append(parts, fmt.Sprintf("%s (%s) clears %s", Name(pt), pt.Title, KindList(h.PartKinds)))
	}
	switch {
	case h.Fix >= 0 && h.Fix == h.Next && len(parts) == 0:
		fx := all[h.Fix]
		if keys {
			return fmt.Sprintf("The fix: %s (%s) clears %s under %s — press %s for its diff.", Name(fx), fx.Title, kinds, h.Scenario, h.JumpKey(all, h.Fix))
		}
		return fmt.Sprintf("The fix: %s (%s) clears %s under %s.", Name(fx), fx.Title, kinds, h.Scenario)
	case h.Fix >= 0:
		fx := all[h.Fix]
		parts = append(parts, fmt.Sprintf("the fix is %s (%s)%s", Name(fx), fx.Title, press(h.Fix)))
		return upper(strings.Join(parts, "; ")) + "."
	}
	s := fmt.Sprintf("no later step clears %s under %s", kinds, h.Scenario)
	if h.Scenario == steps.Failover {
		s += ": no lock on one Redis survives a failover"
	}
	parts = append(parts, s+" (docs/curriculum.md, module 6)")
	return upper(strings.Join(parts, "; ")) + "."
}

// CodeNote heads step i's code pane when the learner came from the break.
func (h *Handoff) CodeNote(all []*steps.Step, i int) string {
	st, from := all[i], all[h.From]
	base := "the step before"
	if b := BaseOf(all, i); b >= 0 {
		base = Name(all[b])
	}
	if i == h.Base {
		return fmt.Sprintf("%s does not break under %s; %s's own diff from it is what broke. This is %s's diff from %s", Name(st), h.Scenario, Name(from), Name(st), base)
	}
	if i == h.Fix {
		return fmt.Sprintf("%s is the fix for %s under %s: its diff from %s", Name(st), Name(from), h.Scenario, base)
	}
	note := fmt.Sprintf("%s: its diff from %s — it does not clear %s under %s", Name(st), base, KindList(h.Kinds), h.Scenario)
	switch {
	case i == h.Next && len(h.Clears) > 0:
		note = fmt.Sprintf("%s: its diff from %s — it clears %s under %s, not all of %s", Name(st), base, KindList(h.Clears), h.Scenario, KindList(h.Kinds))
	case i == h.Part:
		note = fmt.Sprintf("%s: its diff from %s — it clears %s under %s, not all of %s", Name(st), base, KindList(h.PartKinds), h.Scenario, KindList(h.Kinds))
	}
	if h.Fix >= 0 {
		note += fmt.Sprintf("; %s is the fix (press %d)", Name(all[h.Fix]), all[h.Fix].Number)
	}
	return note
}

// upper starts s with a capital letter.
func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Verdict is a verdict as the matrix prints it: ✓, the kinds, or ? and the unjudged kinds.
func Verdict(v, unjudged []steps.Kind) string {
	switch {
	case len(unjudged) > 0:
		return "? (" + KindList(unjudged) + ")"
	case len(v) > 0:
		return KindList(v)
	}
	return "✓"
}

// KindList is "overlap, oversold".
func KindList(ks []steps.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Count is n with its noun (vocab.Count): "1 order", "3 orders".
var Count = vocab.Count

// CellText is a cell as the table prints it: ✓ where no judged kind happened, the kinds that
// did, ? without a verdict, or skipped.
func CellText(c matrix.Cell) string {
	switch CellClass(c) {
	case "skipped":
		return "skipped"
	case "unknown":
		return "?"
	case "bad":
		return KindList(c.Violations)
	}
	return "✓"
}

// CellClass is what a cell is, as a page colours it: ok (✓), bad (a violation), unknown (?),
// skipped.
func CellClass(c matrix.Cell) string {
	switch {
	case c.Skipped != "":
		return "skipped"
	case len(c.Unjudged) > 0:
		return "unknown"
	case len(c.Violations) > 0:
		return "bad"
	}
	return "ok"
}

// Coda is what follows a broken run's report, as run prints it and a page shows it: the step's
// lesson, under the step's own break (the lesson is that break's story), and where to go next
// (the hand-off, after any break; learner: the learner's lock in all, nil if none). Both are ""
// when nothing was violated.
func Coda(all []*steps.Step, st *steps.Step, sc steps.Scenario, violations []steps.Kind, learner *steps.Step) (lesson, next string) {
	if len(violations) == 0 {
		return "", ""
	}
	if sc == st.BreakWith {
		lesson = st.Lesson
	}
	if i := slices.Index(all, st); i >= 0 {
		next = NewHandoff(all, i, sc, violations, learner).Headline(all)
	}
	return lesson, next
}
