package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-lab/lockstep/steps"
)

// The steps as a course: the numbered line, where each step grew from, and which step fixes what
// broke one. Everything here is read from the catalog's descriptors, never written down twice.

// numbered tells whether st is on the numbered line: not a side road (Side, Number 0).
func numbered(st *steps.Step) bool { return !st.Side && st.Number > 0 }

// takesNoLock tells whether st takes no lock at all (step 1, the endpoint the articles start
// from): faults aimed at a lock have nothing to act on.
func takesNoLock(st *steps.Step) bool { return st.NoLock }

// lastNumber is the highest step number of the line.
func lastNumber(all []*steps.Step) int {
	n := 0
	for _, st := range all {
		n = max(n, st.Number)
	}
	return n
}

// byNumber is the index of step number n, or -1.
func byNumber(all []*steps.Step, n int) int {
	for i, st := range all {
		if numbered(st) && st.Number == n {
			return i
		}
	}
	return -1
}

// stepName is how the lab names a step in a sentence: "step 4", or a side road's slug.
func stepName(st *steps.Step) string {
	if numbered(st) {
		return fmt.Sprintf("step %d", st.Number)
	}
	return st.Slug
}

// stepTitle is stepName at the start of a sentence: "Step 4", a side road's slug as it is.
func stepTitle(st *steps.Step) string {
	if numbered(st) {
		return upper(stepName(st))
	}
	return stepName(st)
}

// baseOf is the index of the step that all[i] grew from (its Base: its code pane diffs against
// it), or -1 for the first, or a base the catalog does not hold.
func baseOf(all []*steps.Step, i int) int {
	if b := all[i].Base; b != "" {
		for j, st := range all {
			if st.Slug == b {
				return j
			}
		}
	}
	return -1
}

// nextOf is the index of the numbered step after all[i] on the line (a side road's next is the
// step after its base's), or -1 after the last.
func nextOf(all []*steps.Step, i int) int {
	n := all[i].Number
	if !numbered(all[i]) {
		if b := baseOf(all, i); b >= 0 {
			n = all[b].Number
		}
	}
	return byNumber(all, n+1)
}

// extends tells whether typed is the start of a longer step number: with steps 10–17, "1" may
// still become 10–17.
func extends(all []*steps.Step, typed string) bool {
	for _, st := range all {
		s := strconv.Itoa(st.Number)
		if numbered(st) && len(s) > len(typed) && strings.HasPrefix(s, typed) {
			return true
		}
	}
	return false
}

// handoff is where the lab sends a learner after a scenario broke a step: the next step, and the
// first later step whose row of the matrix (its Expect) clears every kind that broke this one
// under that scenario — the fix. The next step is called the fix only when it is.
type handoff struct {
	from   int            // the broken step's index
	sc     steps.Scenario // the scenario that broke it
	kinds  []steps.Kind   // the kinds it broke with
	next   int            // the next step's index, -1 after the last
	clears []steps.Kind   // of kinds, those the next step's row clears under sc
	fix    int            // the first later numbered step that clears every kind, -1 if none
	// part is the first later numbered step before the fix, other than the next one, that clears
	// some of the kinds the next one does not (fencing tokens clear oversold under pause, not
	// overlap), -1 if none; its kinds are partKinds.
	part      int
	partKinds []steps.Kind
	// base is a side road's base when its row clears every kind (the road left a cure behind),
	// -1 otherwise.
	base int
	// like is, for the learner's own lock, the last step of the line that breaks with every one
	// of its kinds under sc (the fix is sought after it), -1 otherwise.
	like int
}

// newHandoff works out the hand-off after all[i] broke with kinds under sc.
func newHandoff(all []*steps.Step, i int, sc steps.Scenario, kinds []steps.Kind) *handoff {
	h := &handoff{from: i, sc: sc, kinds: kinds, next: nextOf(all, i), fix: -1, part: -1, base: -1, like: -1}
	if isLearner(all[i]) {
		// The learner's own lock is on no line: it broke as the last step that breaks with every
		// one of these kinds under sc, and the fix is sought after that one.
		h.next = -1
		for j, st := range all {
			if numbered(st) && !slices.ContainsFunc(kinds, func(k steps.Kind) bool { return !slices.Contains(st.Expect[sc], k) }) &&
				(h.like < 0 || st.Number > all[h.like].Number) {
				h.like = j
			}
		}
	}
	if h.next >= 0 {
		for _, k := range kinds {
			if !slices.Contains(all[h.next].Expect[sc], k) {
				h.clears = append(h.clears, k)
			}
		}
	}
	from := all[i].Number
	if !numbered(all[i]) {
		if b := baseOf(all, i); b >= 0 {
			from = all[b].Number
		}
	}
	if h.like >= 0 {
		from = all[h.like].Number
	}
	// The fix is the first step of the line after this one that clears every kind, in the
	// line's order (the steps' numbers), whatever the catalog's order; on the way, the first that
	// clears some of them (other than the next one, which the sentence names anyway).
	for n := from + 1; n <= lastNumber(all) && h.fix < 0; n++ {
		j := byNumber(all, n)
		if j < 0 {
			continue
		}
		left := slices.DeleteFunc(slices.Clone(kinds), func(k steps.Kind) bool { return !slices.Contains(all[j].Expect[sc], k) })
		switch {
		case len(left) == 0:
			h.fix = j
		case len(left) < len(kinds) && h.part < 0 && j != h.next:
			cleared := slices.DeleteFunc(slices.Clone(kinds), func(k steps.Kind) bool { return slices.Contains(left, k) })
			if slices.ContainsFunc(cleared, func(k steps.Kind) bool { return !slices.Contains(h.clears, k) }) {
				h.part, h.partKinds = j, cleared // it clears something the next step does not
			}
		}
	}
	if b := baseOf(all, i); b >= 0 && !numbered(all[i]) &&
		!slices.ContainsFunc(kinds, func(k steps.Kind) bool { return slices.Contains(all[b].Expect[sc], k) }) {
		h.base = b
	}
	return h
}

// jumpKey is the key that opens step i: → for the step after the broken one in the catalog (what
// → opens), else its number.
func (h *handoff) jumpKey(all []*steps.Step, i int) string {
	if i == h.from+1 {
		return "→"
	}
	return strconv.Itoa(all[i].Number)
}

// sentence says where to go, in words: the fix and how to reach it, or that no step clears it.
func (h *handoff) sentence(all []*steps.Step) string { return h.say(all, true) }

// headline says where the fix is, for a report read away from the lab's keys.
func (h *handoff) headline(all []*steps.Step) string { return h.say(all, false) }

// say is the hand-off in words; keys says how to open the steps it names with the lab's keys.
func (h *handoff) say(all []*steps.Step, keys bool) string {
	kinds := kindList(h.kinds)
	press := func(i int) string {
		if !keys {
			return ""
		}
		return ": press " + h.jumpKey(all, i) + " for its diff"
	}
	if h.base >= 0 {
		// the side road broke what its base holds: the way on is back to the base
		b := all[h.base]
		s := fmt.Sprintf("The fix is to go back: its base, %s (%s), does not break under %s", stepName(b), b.Title, h.sc)
		if keys {
			s += " (press " + h.jumpKey(all, h.base) + ")"
		}
		return s + "."
	}
	var parts []string
	if h.like >= 0 {
		lk := all[h.like]
		parts = append(parts, fmt.Sprintf("under %s it breaks as %s (%s) does", h.sc, stepName(lk), lk.Title))
	}
	if h.next >= 0 && h.next != h.fix {
		nx := all[h.next]
		now := fmt.Sprintf("%s does not clear %s under %s", stepName(nx), kinds, h.sc)
		if len(h.clears) > 0 {
			left := slices.DeleteFunc(slices.Clone(h.kinds), func(k steps.Kind) bool { return slices.Contains(h.clears, k) })
			now = fmt.Sprintf("%s clears %s, not %s", stepName(nx), kindList(h.clears), kindList(left))
		}
		parts = append(parts, now)
	}
	if h.part >= 0 {
		pt := all[h.part]
		parts = append(parts, fmt.Sprintf("%s (%s) clears %s", stepName(pt), pt.Title, kindList(h.partKinds)))
	}
	switch {
	case h.fix >= 0 && h.fix == h.next && len(parts) == 0:
		fx := all[h.fix]
		if keys {
			return fmt.Sprintf("The fix: %s (%s) clears %s under %s — press %s for its diff.", stepName(fx), fx.Title, kinds, h.sc, h.jumpKey(all, h.fix))
		}
		return fmt.Sprintf("The fix: %s (%s) clears %s under %s.", stepName(fx), fx.Title, kinds, h.sc)
	case h.fix >= 0:
		fx := all[h.fix]
		parts = append(parts, fmt.Sprintf("the fix is %s (%s)%s", stepName(fx), fx.Title, press(h.fix)))
		return upper(strings.Join(parts, "; ")) + "."
	}
	s := fmt.Sprintf("no later step clears %s under %s", kinds, h.sc)
	if h.sc == steps.Failover {
		s += ": no lock on one Redis survives a failover"
	}
	parts = append(parts, s+" (docs/curriculum.md, module 6)")
	return upper(strings.Join(parts, "; ")) + "."
}

// codeNote heads step i's code pane when the learner came from the break.
func (h *handoff) codeNote(all []*steps.Step, i int) string {
	st, from := all[i], all[h.from]
	base := "the step before"
	if b := baseOf(all, i); b >= 0 {
		base = stepName(all[b])
	}
	if i == h.base {
		return fmt.Sprintf("%s does not break under %s; %s's own diff from it is what broke. This is %s's diff from %s", stepName(st), h.sc, stepName(from), stepName(st), base)
	}
	if i == h.fix {
		return fmt.Sprintf("%s is the fix for %s under %s: its diff from %s", stepName(st), stepName(from), h.sc, base)
	}
	note := fmt.Sprintf("%s: its diff from %s — it does not clear %s under %s", stepName(st), base, kindList(h.kinds), h.sc)
	switch {
	case i == h.next && len(h.clears) > 0:
		note = fmt.Sprintf("%s: its diff from %s — it clears %s under %s, not all of %s", stepName(st), base, kindList(h.clears), h.sc, kindList(h.kinds))
	case i == h.part:
		note = fmt.Sprintf("%s: its diff from %s — it clears %s under %s, not all of %s", stepName(st), base, kindList(h.partKinds), h.sc, kindList(h.kinds))
	}
	if h.fix >= 0 {
		note += fmt.Sprintf("; %s is the fix (press %d)", stepName(all[h.fix]), all[h.fix].Number)
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

// kindList is "overlap, oversold".
func kindList(ks []steps.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
