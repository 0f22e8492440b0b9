package main

import (
	"fmt"

	"github.com/lockstep-lab/lockstep/steps"
)

// oversold is the units sold that never left the shelf.
func (a *arena) oversold() int {
	if a.initial < 0 {
		return 0
	}
	return max(0, a.confirmed-(a.initial-a.shelf))
}

// cmds is every Redis command the session sent, the ones the feed dropped included.
func (a *arena) cmds() int { return a.commands + a.drops }

// perOrder is Redis commands per confirmed order.
func (a *arena) perOrder() float64 { return float64(a.cmds()) / float64(max(a.confirmed, 1)) }

// judged tells whether kind k counts in this session: a scenario judges only its own kinds.
func (a *arena) judged(k steps.Kind) bool {
	if a.scenario == "" {
		return true
	}
	for _, j := range steps.Judges[a.scenario] {
		if j == k {
			return true
		}
	}
	return false
}

// violated tells whether kind k was seen, and says it in one sentence with the numbers as they are
// now (oversold and flood move on after they are announced; a finished run's report is final).
func (a *arena) violated(k steps.Kind) (string, bool) {
	s, ok := a.viol[k]
	if a.done {
		return s, ok
	}
	switch k {
	case steps.Oversold:
		if a.oversold() > 0 {
			return oversoldSentence(a.confirmed, a.initial-a.shelf), true
		}
		if ok { // a later stale write evened the numbers out again
			return fmt.Sprintf("oversold earlier; now %d orders confirmed and %d units left the shelf", a.confirmed, a.initial-a.shelf), true
		}
	case steps.Flood:
		if a.confirmed > 0 && a.perOrder() > steps.FloodLimit {
			return fmt.Sprintf("%d Redis commands for %d confirmed orders: %.0f per order (limit %d)",
				a.cmds(), a.confirmed, a.perOrder(), steps.FloodLimit), true
		}
	}
	return s, ok
}

// firstLatest returns the first judged violation and the most recent other one (kinds, "" if none),
// from the same judgement INVARIANTS shows.
func (a *arena) firstLatest() (first, latest steps.Kind) {
	var order []steps.Kind
	for _, k := range a.seen {
		if _, bad := a.violated(k); bad && a.judged(k) {
			order = append(order, k)
		}
	}
	for _, k := range steps.Kinds { // computed, not (yet) announced
		if _, bad := a.violated(k); bad && a.judged(k) && !containsKind(order, k) {
			order = append(order, k)
		}
	}
	if len(order) == 0 {
		return "", ""
	}
	if len(order) > 1 {
		latest = order[len(order)-1]
	}
	return order[0], latest
}

func containsKind(ks []steps.Kind, k steps.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// oversoldSentence says the oversold units as the referee does.
func oversoldSentence(confirmed, left int) string {
	verb := "units left"
	if left == 1 {
		verb = "unit left"
	}
	return fmt.Sprintf("%d orders confirmed but only %d %s the shelf: %d oversold", confirmed, left, verb, confirmed-left)
}
