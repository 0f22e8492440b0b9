package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/picture"
)

// helpPane is the ? screen: every pane's keys, what the faults do, how to read the timeline and
// where the lab sends a learner after a break. It scrolls a line or a page at a time.
type helpPane struct {
	keys   helpKeys
	groups []keyGroup
	hm     help.Model
	vp     viewport.Model
	shown  int // the width the viewport's text was laid out for
	w, h   int
}

// keyGroup is one pane's key map, under a title.
type keyGroup struct {
	title string
	km    help.KeyMap
}

func newHelpPane(k helpKeys, groups []keyGroup) *helpPane {
	return &helpPane{keys: k, groups: groups, hm: help.New(), vp: viewport.New(80, 20)}
}

// KeyMap is the pane's keys, for ? (and the footer's choice of them).
func (p *helpPane) KeyMap() help.KeyMap { return p.keys }

// SetSize gives the help screen w columns and h lines.
func (p *helpPane) SetSize(w, h int) {
	p.w, p.h = w, h
	p.vp.Width, p.vp.Height = w, max(h-2, 1)
	if p.shown != w {
		p.shown = w
		p.vp.SetContent(strings.Join(p.lines(w), "\n"))
	}
}

// Top scrolls back to the first line.
func (p *helpPane) Top() { p.vp.GotoTop() }

// Update scrolls, or closes help.
func (p *helpPane) Update(k tea.KeyMsg) tea.Msg {
	km := p.keys
	if key.Matches(k, km.Close) {
		return closeHelp{}
	}
	km.scroll(&p.vp, k)
	return nil
}

// helpFaults says what each fault key does, in its scenario's words.
func helpFaults() string {
	b := "Faults hit the current holder: the buyer inside the critical section, or else the lock's owner; " +
		"each key plays its scenario's move, as b's scenarios do."
	for _, sc := range scenario.Keyed() {
		b += " " + sc.Label + ": " + sc.Help + "."
	}
	return b
}

const helpBreak = "b replays the scenario that breaks this step. After it breaks, the lab names the fix: the first later " +
	"step whose row of the matrix clears every kind that broke this one under that scenario — → when it is the next step, " +
	"else its number — and opens its diff. When the next step clears only some of them, it says which; when no step " +
	"does, it says so."

const helpRewind = "Hold the orders (space), or let b's run finish, then , and . move a cursor back and forth through " +
	"the events, one at a time (home: the first event the timeline still shows, end: the latest). The timeline marks the " +
	"cursor's column (▼ on the ruler), and the line under it says what happened there in words — the referee's own " +
	"sentence for a violation — while the LOCK line (and on a quorum lock, one line per node) says the lock as it stood " +
	"then, its TTL reckoned from its holder's last write (≈). space leaves rewind (and, live, resumes the orders)."

const helpVerdict = "INVARIANTS says, for each kind, what the referee judged: ✗ it found a violation (its sentence says how, " +
	"and while buyers run, when it found it), ✓ it judged the kind and found none, ? no verdict — not yet (stuck and idle are " +
	"judged at the end of a scenario; a live session never judges idle) or it could not see (the line under it says why), " +
	"– not judged by this scenario."

// helpTimeline is the timeline's help: the lanes' glyphs, then every mark the terminal draws, as
// picture.Legend names it (the page's legend reads the same table).
func helpTimeline() string {
	var marks []string
	for _, g := range picture.Legend {
		if !g.Page && !g.Lock {
			marks = append(marks, picture.Glyphs(g.Marks)+" "+g.Says)
		}
	}
	return "One lane per buyer, one for the lock server; time runs left to right, one column = TTL/20. " +
		"Buyer lanes: █ inside the critical section, ▓ inside while another order is inside too (an overlap; a buyer's two orders " +
		"after a second request count too), ═ holds the lock outside it, ░ at work with no lock to take (step 1, which takes none), " +
		"· waiting (on steps 2–6, which never wait: a refused attempt), " +
		"~ spinning (asking for the lock again and again), ┄ cut off from the lock server (a partition), ▒ inside and cut off " +
		"(its lock can tell it nothing: it works on), ‖ frozen, × crashed. " +
		"The status after a lane says \"▓ 2 inside\" when a buyer's two orders are inside together, \"+1 waits\" when its second one waits its turn. " +
		"Marks: " + strings.Join(marks, ", ") + ". On step 14 the LOCK line shows the line of waiters, first first. " +
		"Lock lane: ─ free, ═ held, with the owner's number at the start of each hold (on a quorum lock, the buyer holding a majority of the nodes), x expired, ! deleted by a non-owner, F failover, R a node restarted without persistence, ? lost in the failover or restart. " +
		"When not every buyer fits, the lanes shown are the buyers a sentence on screen names, the lock's owner, then the busy ones."
}

// lines is the whole help text laid out for w columns.
func (p *helpPane) lines(w int) []string {
	p.hm.Width = w
	b := []string{sBold.Render("Keys")}
	for _, g := range p.groups {
		b = append(b, "", sLabel.Render(g.title))
		b = append(b, strings.Split(p.hm.FullHelpView(g.km.FullHelp()), "\n")...)
	}
	for _, sec := range [][2]string{{"Faults", helpFaults()}, {"After a break", helpBreak}, {"Rewind", helpRewind}, {"Invariants", helpVerdict}, {"The timeline", helpTimeline()}} {
		b = append(b, "", sBold.Render(sec[0]))
		b = append(b, wrap(sec[1], w)...)
	}
	return b
}

// View is the help text at its scroll position, and the keys.
func (p *helpPane) View() string {
	keys := p.keys.ShortHelp()
	if p.vp.TotalLineCount() > p.vp.Height {
		scroll := key.NewBinding(key.WithKeys("down"), key.WithHelp("↑↓ pgup pgdn", fmt.Sprintf("scroll (%.0f%%)", p.vp.ScrollPercent()*100)))
		keys = append([]key.Binding{scroll}, keys...)
	}
	f := footer(p.w, keys)
	p.vp.Height = max(p.h-1-1-strings.Count(f, "\n"), 1)
	return "\n" + p.vp.View() + "\n" + f
}
