package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// driveView is the arena in drive mode: what drive mode is and the last move in words, the goal,
// the shop and the lock, the timeline, each buyer's next command in words, the invariants, and the
// keys. What must be seen comes first: a line for the last move and one for each buyer; with room
// to spare, the move's consequences and the buyers' commands get a second line, then the log.
func (p *arenaPane) driveView(w, h int) string {
	s := p.s
	a := s.ar
	foot := strings.Split(footer(w, p.keys.driveRow(s.drv)), "\n")
	status := wrap(sLabel.Render("▶ DRIVE")+" "+sDim.Render("time stands still: you send each command"), w)
	var msg []string
	if s.msg != "" {
		msg = wrap(sWarn.Render(oneLine(s.msg)), w)
	}
	goal := wrap(p.goalLine(), w)
	goal = goal[:min(len(goal), 2)]
	first, latest := a.verdict()
	inv := a.invariantLines(w, first, latest)
	lanes := len(a.lanes)
	next := p.nextLines(w, 1)
	free := h - len(foot) - len(status) - min(len(msg), 1) - len(goal) - 2 - 2 - len(a.nodeLanes) - lanes - len(next) - len(inv)
	if free < 0 { // fewer buyer lanes on the timeline: the words below say each buyer still
		lanes = max(lanes+free, 0)
		free = 0
	}
	if more := min(len(msg), 3) - min(len(msg), 1); more > 0 && free > 0 {
		free -= min(more, free)
	}
	msg = msg[:min(len(msg), h-len(foot)-len(status)-len(goal)-2-2-len(a.nodeLanes)-lanes-len(next)-len(inv), 3)]
	if wide := p.nextLines(w, 2); len(wide)-len(next) <= free {
		free -= len(wide) - len(next)
		next = wide
	}
	var out []string
	out = append(out, status...)
	out = append(out, msg...)
	out = append(out, goal...)
	out = append(out, a.shopLine(w), p.driveLockLine(w))
	p.tl.a, p.tl.keep = a, a.named()
	p.tl.SetSize(w, lanes)
	out = append(out, p.tl.View()...)
	out = append(out, next...)
	out = append(out, inv...)
	if logN := min(free-1, len(a.log)); logN > 0 {
		out = append(out, sLabel.Render("LOG"))
		for _, l := range a.log[len(a.log)-logN:] {
			out = append(out, sDim.Render(ansi.Truncate(l, w, "…")))
		}
	}
	if len(out) > h-len(foot) {
		out = out[:max(h-len(foot), 0)]
	}
	for len(out) < h-len(foot) {
		out = append(out, "")
	}
	return strings.Join(append(out, foot...), "\n")
}

// goalLine is the challenge: to reach, reached (and the step that fixes it), or what a step that
// holds says.
func (p *arenaPane) goalLine() string {
	s := p.s
	dm := s.drv
	n := 0
	if dm.f != nil {
		n = len(dm.f.Moves)
	}
	moves := course.Count(n, "move", "moves")
	switch {
	case !dm.hasCh:
		return sLabel.Render("GOAL") + " none for this lock: drive it as you like · " + moves
	case dm.reached > 0:
		how := ""
		if dm.atEnd {
			how = ", found as the session ended"
		}
		out := sBad.Render(fmt.Sprintf("✓ GOAL REACHED in %s (par %d)%s", course.Count(dm.reached, "move", "moves"), dm.ch.Par(), how))
		if h := s.handoff; h != nil && h.Fix >= 0 {
			out += " — " + sWarn.Render(fmt.Sprintf("the fix: %s (%s): g opens its diff", course.Name(s.steps[h.Fix]), s.steps[h.Fix].Title))
		} else if h != nil {
			out += " — " + sWarn.Render(h.Headline(s.steps))
		}
		return out
	case dm.ch.Holds && dm.ended != nil:
		return sGood.Render("this step holds: ") + fmt.Sprintf("the referee found no %s in %s", dm.ch.Goal, moves)
	}
	return sLabel.Render("GOAL") + " " + dm.ch.Says + sDim.Render(fmt.Sprintf(" · par %d · %s · h hints", dm.ch.Par(), moves))
}

// driveLockLine says where the lock stands, as the grader read it after the last move.
func (p *arenaPane) driveLockLine(w int) string {
	dm := p.s.drv
	if p.s.ar.noLock {
		return p.s.ar.lockLine(w)
	}
	l := "not read yet"
	if dm.f != nil {
		l = strings.TrimPrefix(dm.f.Lock, "the lock: ")
	}
	if dm.ended != nil {
		return p.s.ar.lockLine(w)
	}
	return ansi.Truncate(sLabel.Render("LOCK")+" "+l, w, "…")
}

// nextLines are each buyer's lane in words, in at most lines lines each: its next command, or
// what it is doing; the chosen buyer (the one the fault keys strike) marked.
func (p *arenaPane) nextLines(w, lines int) []string {
	dm := p.s.drv
	if dm.f == nil {
		return []string{sDim.Render("  the buyers come on the stage…")}
	}
	var out []string
	for _, l := range dm.f.Lanes {
		mark := "  "
		if l.Buyer == dm.chosen {
			mark = sSel.Render("▸ ")
		}
		ws := wrap(l.String(), w-2)
		if len(ws) > lines {
			ws = append(ws[:lines-1], ansi.Truncate(strings.Join(ws[lines-1:], " "), w-2, "…"))
		}
		for i, x := range ws {
			if i == 0 {
				out = append(out, mark+x)
			} else {
				out = append(out, "    "+x)
			}
		}
	}
	return out
}

// driveKeys are drive mode's keys, for its footer and ?: in drive mode the number keys are buyers,
// not steps.
type driveKeys struct {
	g                                       globalKeys
	Send, Wait, Buyer, Skewed, Faults, Undo key.Binding
	Hint, End, Fix, Leave                   key.Binding
}

// newDriveKeys are the keys with the fault keys striking buyer chosen (0: the buyer chosen last).
func newDriveKeys(g globalKeys, chosen int) driveKeys {
	who := "fault on the buyer chosen last"
	if chosen > 0 {
		who = fmt.Sprintf("fault on buyer %d", chosen)
	}
	return driveKeys{g: g,
		Send:   bind([]string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "1-9", "buyers: send one's next command"),
		Wait:   bind([]string{"w"}, "w", "time passes TTL/4"),
		Buyer:  bind([]string{"+"}, "+", "a buyer orders"),
		Skewed: bind([]string{"k"}, "k", "a buyer, clock 3 TTL fast"),
		Faults: bind([]string{"e"}, faultKeyList(), who),
		Undo:   bind([]string{"backspace"}, "⌫", "undo"),
		Hint:   bind([]string{"h"}, "h", "hint"),
		End:    bind([]string{"enter"}, "enter", "end & judge"),
		Fix:    bind([]string{"g"}, "g", "the fix"),
		Leave:  bind([]string{"esc"}, "esc", "leave drive"),
	}
}

// ShortHelp and FullHelp make driveKeys a help.KeyMap.
func (k driveKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Send, k.Wait, k.Buyer, k.Faults, k.Undo, k.Hint, k.End, k.Leave, k.g.Help, k.g.Quit}
}

func (k driveKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Send, k.Wait, k.Buyer, k.Skewed, k.Faults}, {k.Undo, k.Hint, k.End, k.Fix, k.Leave}}
}

// driveRow is the footer in drive mode: the fix's key once the goal is reached.
func (k arenaKeys) driveRow(dm *driveMode) []key.Binding {
	dk := newDriveKeys(k.g, dm.chosen)
	row := dk.ShortHelp()
	if dm.reached > 0 {
		row = append(row[:len(row)-3], dk.Fix, dk.Leave, k.g.Help, k.g.Quit)
	}
	return row
}
