package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// The arena's panels, one line (or a few) each: the shop, the lock, the lock server, the
// invariants.

// shopLine is the shop's numbers in w columns: "Redis commands per order" shortens before any
// number is cut.
func (a *board) shopLine(w int) string {
	over := fmt.Sprintf("oversold %d", a.oversold())
	if a.oversold() > 0 {
		over = sBad.Render("✗ OVERSOLD " + fmt.Sprint(a.oversold()))
	}
	initial, shelf := fmt.Sprint(a.initial), fmt.Sprint(a.shelf)
	if a.initial < 0 {
		initial, shelf = "?", "?"
	}
	pers := []string{fmt.Sprintf("%.1f Redis cmds/order", a.perOrder()), fmt.Sprintf("%.1f cmds/order", a.perOrder())}
	if a.confirmed == 0 {
		pers = []string{fmt.Sprintf("%d Redis cmds, no order yet", a.cmds()), fmt.Sprintf("%d cmds, no order yet", a.cmds())}
	}
	fences := []string{""} // what the inventory refused, long and short
	if a.fenced > 0 {
		writes := map[bool]string{true: "write", false: "writes"}[a.fenced == 1]
		fences = []string{
			" · " + sWarn.Render(fmt.Sprintf("%d stale %s refused (token too low)", a.fenced, writes)),
			" · " + sWarn.Render(fmt.Sprintf("%d stale %s refused", a.fenced, writes)),
		}
	}
	var s string
	for _, fence := range fences {
		for _, per := range append(pers, "") { // the commands go first when nothing else fits
			s = fmt.Sprintf("%s initial %s · on shelf %s · confirmed %d · %s%s",
				sLabel.Render("SHOP"), initial, shelf, a.confirmed, over, fence)
			if per != "" {
				s += " · " + per
			}
			if lipgloss.Width(s) <= w {
				break
			}
		}
		if lipgloss.Width(s) <= w {
			break
		}
	}
	if d := sDim.Render(fmt.Sprintf(" (%d spin marks dropped)", a.drops)); a.drops > 0 && lipgloss.Width(s+d) <= w {
		s += d
	}
	return ansi.Truncate(s, w, "…")
}

// topoLine says what the lock server is made of, and what a failover did to it.
func (a *board) topoLine() string {
	head := sLabel.Render("NODES") + " "
	switch {
	case !a.canFail:
		return head + "a single lock server, no replica"
	case a.failedOver:
		return head + sWarn.Render("A died → B (the replica) is primary, without the last lock write")
	case a.armed != "":
		return head + "primary A · replica B · " + sWarn.Render(a.armed)
	}
	return head + "primary A · replica B, in sync"
}

// verdict is the first violation's sentence (or the no-violation line) and the latest other
// one's ("" if none), as the invariant panel says them: the referee's sentences, and a ✓ only
// where it judged everything.
func (a *board) verdict() (first, latest string) {
	fk, lk := a.firstLatest()
	switch {
	case a.done && a.first != "":
		first = sBad.Render("first violation: ") + a.first
	case fk != "":
		s, _ := a.violated(fk)
		first = sBad.Render("first violation") + a.when(fk) + s
	case a.done && a.err == nil && a.rep != nil && !a.rep.Complete():
		first = sWarn.Render("? no verdict: ") + "the referee could not judge " + course.KindList(a.rep.Unjudged) + " (below); no other judged kind was violated"
	case a.done && a.err == nil:
		first = sGood.Render("✓ no violation: every judged invariant held")
	default:
		first = sGood.Render("✓ no violation so far")
		switch {
		case a.scenario == drive.Scenario:
			first += sDim.Render("  (stuck is found too when enter ends the session; idle is not judged in drive mode)")
		case a.scenario == "":
			first += sDim.Render("  (✗ stuck once a lock that never expires outlives its owner's order by a TTL; ? " + string(notLive) + " is judged only at the end of a run)")
		case a.judged(steps.Stuck) || a.judged(notLive):
			first += sDim.Render("  (? is judged when the scenario ends; – not judged by it)")
		default:
			first += sDim.Render("  (– not judged by this scenario)")
		}
	}
	if lk != "" && !a.done {
		s, _ := a.violated(lk)
		latest = sBad.Render("latest: ") + string(lk) + a.when(lk) + s
	}
	return first, latest
}

// when says when the referee found kind k, before its sentence (": " for a finished run, whose
// report is final): while the session goes on, the SHOP line's numbers move past the sentence's.
func (a *board) when(k steps.Kind) string {
	if a.done {
		return ": "
	}
	return sDim.Render(", at "+fmtSec(a.violAt[k])) + ": "
}

// saidParts is a finished run's verdict (course.Said) as the INVARIANTS line's parts: each
// judged kind flagged, or one ✓ when every one held, then what was seen and not judged.
func saidParts(said course.Said) []string {
	var parts []string
	if said.Class == "ok" {
		parts = append(parts, sGood.Render(said.Line))
	}
	for _, f := range said.Flags {
		if said.Class == "ok" {
			break
		}
		st := map[string]lipgloss.Style{"✗": sBad, "?": sWarn, "✓": sGood}[f.Mark]
		parts = append(parts, st.Render(f.String()))
	}
	if said.AlsoLine != "" {
		parts = append(parts, sDim.Render("· "+said.AlsoLine))
	}
	return parts
}

// invariantLines is the panel: each kind ✗, ✓, ? (no verdict) or – (not judged), then the
// verdict's sentences, then what the referee could not see.
func (a *board) invariantLines(w int, first, latest string) []string {
	var parts []string
	dropped := 0
	if a.done && a.rep != nil { // a finished run's verdict is its report's, as the page says it
		said := course.SaidOf(a.rep)
		parts = saidParts(said)
		if said.AlsoLine == "" && a.scenario != "" {
			dropped = len(steps.Kinds) - len(a.rep.Judged)
		}
	}
	for _, k := range steps.Kinds {
		if a.done && a.rep != nil {
			break
		}
		_, bad := a.violated(k)
		switch {
		case bad && a.judged(k):
			parts = append(parts, sBad.Render("✗ "+string(k)))
		case !a.judged(k) && a.scenario != "" && !bad:
			dropped++ // a scenario's row names only what it judges, and what was seen anyway
		case !a.judged(k):
			parts = append(parts, sDim.Render("– "+string(k)))
		case a.unjudged(k):
			parts = append(parts, sWarn.Render("? "+string(k)))
		default:
			parts = append(parts, sGood.Render("✓ "+string(k)))
		}
	}
	if dropped > 0 {
		parts = append(parts, sDim.Render(fmt.Sprintf("(%s %s does not judge)", course.Count(dropped, "kind", "kinds"), a.scenario)))
	}
	head := sLabel.Render("INVARIANTS") + " "
	var lines []string
	cur := head
	for _, p := range parts {
		if lipgloss.Width(cur)+1+lipgloss.Width(p) > w && cur != head {
			lines = append(lines, cur)
			cur = strings.Repeat(" ", lipgloss.Width(head))
		}
		if cur[len(cur)-1] != ' ' {
			cur += " "
		}
		cur += p
	}
	lines = append(lines, cur)
	fl := wrap(first, w)
	lines = append(lines, clip(fl, 3, w)...)
	if latest != "" {
		ll := wrap(latest, w)
		lines = append(lines, clip(ll, 2, w)...)
	}
	for _, b := range a.blindLines() {
		bl := wrap(sWarn.Render(oneLine(b)), w)
		lines = append(lines, clip(bl, 2, w)...)
	}
	return lines
}
