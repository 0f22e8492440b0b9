package main

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/steps"
)

// The arena's panels, one line (or a few) each: the shop, the lock, the lock server, the
// invariants.

func (a *arena) shopLine() string {
	over := fmt.Sprintf("oversold %d", a.oversold())
	if a.oversold() > 0 {
		over = sBad.Render("✗ OVERSOLD " + fmt.Sprint(a.oversold()))
	}
	initial, shelf := fmt.Sprint(a.initial), fmt.Sprint(a.shelf)
	if a.initial < 0 {
		initial, shelf = "?", "?"
	}
	per := fmt.Sprintf("%.1f Redis cmds/order", a.perOrder())
	if a.confirmed == 0 {
		per = fmt.Sprintf("%d Redis cmds, no order yet", a.cmds())
	}
	s := fmt.Sprintf("%s initial %s · on shelf %s · confirmed %d · %s · %s",
		sLabel.Render("SHOP"), initial, shelf, a.confirmed, over, per)
	if a.drops > 0 {
		s += sDim.Render(fmt.Sprintf(" (%d spin marks dropped)", a.drops))
	}
	return s
}

func (a *arena) topoLine() string {
	switch {
	case !a.canFail:
		return "     lock server: a single node, no replica"
	case a.failedOver:
		return "     lock server: " + sWarn.Render("node A died → node B (the replica) is primary") + "; it missed the last lock write"
	case a.armed:
		return "     lock server: primary node A · replica node B · " + sWarn.Render("failover armed: the next lock write will not reach B")
	}
	return "     lock server: primary node A · replica node B (in sync)"
}

func (a *arena) invariantLines(w int) []string {
	var parts []string
	for _, k := range steps.Kinds {
		_, bad := a.violated(k)
		switch {
		case bad && a.judged(k):
			parts = append(parts, sBad.Render("✗ "+string(k)))
		case !a.judged(k):
			parts = append(parts, sDim.Render("– "+string(k)))
		case k == steps.Stuck && !a.done && a.scenario != "":
			parts = append(parts, sDim.Render("? "+string(k)))
		default:
			parts = append(parts, sGood.Render("✓ "+string(k)))
		}
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
	var first string
	fk, lk := a.firstLatest()
	switch {
	case a.done && a.first != "":
		first = sBad.Render("first violation: ") + a.first
	case fk != "":
		s, _ := a.violated(fk)
		first = sBad.Render("first violation: ") + s
	case a.done && a.err == nil:
		first = sGood.Render("✓ no violation: every judged invariant held")
	default:
		first = sGood.Render("✓ no violation so far")
		switch {
		case a.scenario == "":
			first += sDim.Render("  (✗ stuck once a lock outlives its owner's order by a TTL)")
		case a.judged(steps.Stuck):
			first += sDim.Render("  (? stuck is judged when the scenario ends; – not judged by it)")
		default:
			first += sDim.Render("  (– not judged by this scenario)")
		}
	}
	fl := wrap(first, w)
	lines = append(lines, fl[:min(2, len(fl))]...)
	if lk != "" && !a.done {
		s, _ := a.violated(lk)
		lines = append(lines, ansi.Truncate(sBad.Render("latest: ")+string(lk)+": "+s, w, "…"))
	}
	return lines
}
