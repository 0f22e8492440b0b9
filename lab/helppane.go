package main

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// helpPane is the ? screen: every key, how to read the timeline, what the faults do.
type helpPane struct {
	keys helpKeys
	all  [][]key.Binding // every pane's keys, in columns
	hm   help.Model
	off  int // the first line shown
	w, h int
}

func newHelpPane(g globalKeys, all [][]key.Binding) *helpPane {
	return &helpPane{keys: newHelpKeys(g), all: all, hm: help.New()}
}

// SetSize gives the help screen w columns and h lines.
func (p *helpPane) SetSize(w, h int) { p.w, p.h = w, h; p.hm.Width = w }

// Top scrolls back to the first line.
func (p *helpPane) Top() { p.off = 0 }

// Update scrolls, or closes help.
func (p *helpPane) Update(k tea.KeyMsg) tea.Msg {
	switch {
	case key.Matches(k, p.keys.Close):
		return closeHelp{}
	case key.Matches(k, p.keys.Down):
		p.off++
	case key.Matches(k, p.keys.Up):
		p.off = max(0, p.off-1)
	}
	return nil
}

const helpTimeline = "One lane per buyer, one for the lock server; time runs left to right, one column = TTL/20. " +
	"Buyer lanes: █ inside the critical section, ▓ inside while another buyer is inside too (an overlap), " +
	"═ holds the lock outside it, · waiting (on steps 2–6, which never wait: a refused attempt), ~ spinning on SET NX, ‖ frozen, × crashed. " +
	"Marks: G GET stock, S SET stock, o GET lock (the owner check), D DEL lock, L Lua unlock, P TTL renewal. " +
	"Lock lane: ─ free, the owner's number while held, x expired, ! deleted by a non-owner, F failover, ? lost in the failover."

const helpFaults = "Faults hit the current holder: the buyer inside the critical section, or else the lock's owner. " +
	"crash: its process dies, no deferred code runs. error: its work returns an error. slow: its work takes 3×TTL. " +
	"pause: stop-the-world for 3×TTL. unlock-race: it freezes just before the command that deletes its lock. " +
	"failover: the next lock write skips the replica, then the primary dies. nested: its work calls a helper that takes the same lock. " +
	"b replays the scenario that breaks this step; after it breaks, → opens the next step's diff: the fix."

func (p *helpPane) View() string {
	w, h := p.w, p.h
	b := []string{sBold.Render("Keys"), ""}
	b = append(b, strings.Split(p.hm.FullHelpView(p.all), "\n")...)
	b = append(b, "", sBold.Render("The timeline"))
	b = append(b, wrap(helpTimeline, w)...)
	b = append(b, "", sBold.Render("Faults"))
	b = append(b, wrap(helpFaults, w)...)
	keys := p.keys.ShortHelp()
	body := h - 2
	if len(b) > body {
		keys = append([]key.Binding{p.keys.Scroll}, keys...)
	}
	f := footer(w, keys)
	body = h - 2 - strings.Count(f, "\n")
	p.off = max(0, min(p.off, len(b)-body))
	b = b[p.off:]
	if len(b) > body {
		b = b[:max(body, 0)]
	}
	for len(b) < body {
		b = append(b, "")
	}
	return "\n" + strings.Join(b, "\n") + "\n" + f
}
