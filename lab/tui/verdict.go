package tui

import (
	"slices"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// The verdict is the referee's: the kinds it announced (EvViolation) and, when a canned run ends, its
// report. Every sentence a learner reads about a violation is the referee's own; the lab only
// counts (the SHOP line's numbers) and says what the referee could not judge.

// oversold is the units sold that never left the shelf.
func (a *board) oversold() int {
	if a.initial < 0 {
		return 0
	}
	return max(0, a.confirmed-(a.initial-a.shelf))
}

// cmds is every Redis command the session sent, the ones the feed dropped included.
func (a *board) cmds() int { return a.commands + a.drops }

// perOrder is Redis commands per confirmed order.
func (a *board) perOrder() float64 { return float64(a.cmds()) / float64(max(a.confirmed, 1)) }

// judged tells whether kind k counts in this session: a scenario judges only its own kinds.
func (a *board) judged(k steps.Kind) bool {
	switch {
	case a.scenario == "":
		return true
	case a.prog != nil: // no scenario of the matrix: its history says
		return slices.Contains(a.prog.History.Kinds(), k)
	case a.scenario == drive.Scenario:
		return slices.Contains(drive.Judged(), k)
	}
	return slices.Contains(scenario.Judges(a.scenario), k)
}

// violated tells whether the referee found kind k, and its sentence (said when it found it; the
// SHOP line has the numbers as they are now).
func (a *board) violated(k steps.Kind) (string, bool) {
	s, ok := a.viol[k]
	return s, ok
}

// notLive is the kind the referee does not judge while a live session runs: idle is a share of the
// whole run, and only a finished run's report says it.
const notLive = steps.Idle

// unjudged tells whether kind k, judged here, has no verdict (yet): a finished run's referee
// could not judge it (its report says why), or it is judged only when a run ends.
func (a *board) unjudged(k steps.Kind) bool {
	switch {
	case !a.judged(k):
		return false
	case a.done && a.rep != nil:
		return slices.Contains(a.rep.Unjudged, k)
	case a.done:
		return false
	case a.scenario == "":
		return k == notLive
	}
	return k == steps.Stuck || k == notLive // a scenario judges them once its orders are over
}

// blindLines say, for a finished run, what the referee could not judge and why, one line per
// reason: "? foreign-release — not seen: …".
func (a *board) blindLines() []string {
	rep := a.rep
	if !a.done || rep == nil || rep.Complete() {
		return nil
	}
	var out []string
	if rep.TimedOut != "" {
		out = append(out, "? "+course.KindList(rep.Unjudged)+" — not judged: "+rep.TimedOut)
	}
	for _, b := range rep.Untracked {
		var ks []steps.Kind
		for _, k := range b.Kinds {
			if slices.Contains(rep.Unjudged, k) {
				ks = append(ks, k)
			}
		}
		if len(ks) > 0 {
			out = append(out, "? "+course.KindList(ks)+" — not seen: "+b.What)
		}
	}
	return out
}

// headline is a finished run's first violation in the referee's words, also when it could not
// judge every kind (Headline then says only that there is no verdict).
func headline(rep *referee.Report) string {
	if len(rep.Explain) == 0 {
		return ""
	}
	full := *rep
	full.Unjudged = nil
	return full.Headline()
}

// firstLatest returns the first judged violation and the most recent other one (kinds, "" if
// none), in the order the referee announced them.
func (a *board) firstLatest() (first, latest steps.Kind) {
	var order []steps.Kind
	for _, k := range a.seen {
		if a.judged(k) {
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
