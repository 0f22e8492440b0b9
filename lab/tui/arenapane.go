package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/picture"
	"github.com/lockstep-lab/lockstep/steps"
)

// arenaPane is the arena on screen: what runs, the shop, the lock, the timeline, the invariants,
// the lesson after a break, and the log.
type arenaPane struct {
	s    *state
	keys arenaKeys
	tl   timeline
	w, h int
}

func newArenaPane(s *state, g globalKeys) *arenaPane {
	return &arenaPane{s: s, keys: newArenaKeys(g)}
}

// KeyMap is the pane's keys, for ? (and the footer's choice of them).
func (p *arenaPane) KeyMap() help.KeyMap { return p.keys }

// SetSize gives the arena w columns and h lines.
func (p *arenaPane) SetSize(w, h int) { p.w, p.h = w, h }

// Update answers a key with an intent (or nil).
func (p *arenaPane) Update(k tea.KeyMsg) tea.Msg {
	km := p.keys
	switch {
	case key.Matches(k, km.Code):
		return openCode{from: scrArena}
	case key.Matches(k, km.Back):
		return leaveArena{}
	case key.Matches(k, km.Reset):
		return resetArena{}
	case key.Matches(k, km.Slower), key.Matches(k, km.Faster):
		return changeSpeed{slower: key.Matches(k, km.Slower)}
	case key.Matches(k, km.Hold):
		return holdOrders{}
	case key.Matches(k, km.More):
		return addBuyers{1}
	case key.Matches(k, km.Fewer):
		return addBuyers{-1}
	case key.Matches(k, km.Back1):
		return rewindMove{d: -1}
	case key.Matches(k, km.On1):
		return rewindMove{d: 1}
	case key.Matches(k, km.First):
		return rewindMove{first: true}
	case key.Matches(k, km.Last):
		return rewindMove{last: true}
	case key.Matches(k, km.Drive):
		return startDrive{}
	}
	for _, f := range km.faults {
		if key.Matches(k, f.b) {
			return injectFault{f.sc}
		}
	}
	return nil
}

// View lays the arena out in the pane's lines: what must be seen first, then what fits.
func (p *arenaPane) View() string {
	w, h, s := p.w, p.h, p.s
	a := s.ar
	if a != nil && s.drv != nil {
		return p.driveView(w, h)
	}
	if a == nil { // nothing on the arena yet (a search under way, Redis that would not start)
		k := p.keys
		body := append([]string{""}, wrap(sWarn.Render(oneLine(s.msg)), w)...)
		foot := strings.Split(footer(w, []key.Binding{k.Reset, k.g.Break, k.Code, k.Back, k.g.Help, k.g.Quit}), "\n")
		for len(body)+len(foot) < h {
			body = append(body, "")
		}
		return strings.Join(append(body, foot...), "\n")
	}
	// What must be on screen, then what fills the room left, in this order: every buyer lane,
	// a quorum's node lines (its node lanes draw the same story), a few log lines, the lock
	// server's line, the legend, the claim, the rest of the log.
	status := p.statusLines(w)
	first, latest := a.verdict()
	inv := a.invariantLines(w, first, latest)
	lesson := p.lessonLines(w)
	rew := a.rewindLines(w)
	if rew != nil {
		lesson = nil // read already; leaving rewind brings it back
	}
	var story []string // a found program in words, in sight all the while it plays and is rewound
	if a.prog != nil {
		story = a.prog.storyLines(w)
	}
	nodes := a.nodeLines(w)
	foot := p.footer(w)
	topoNeeded := (a.armed != "" || a.failedOver) && !a.multi()
	free := h - len(foot) - len(status) - 2 - 2 - len(a.nodeLanes) - len(inv) - len(lesson) - len(rew) - len(story) // shop, lock; ruler, lock lanes
	if topoNeeded {
		free--
	}
	lanes := max(min(len(a.lanes), free), 0)
	free -= lanes
	if len(nodes) > free && len(a.nodeLanes) > 0 {
		nodes = nil
	}
	free -= len(nodes)
	// a few log lines before the optional lines: the log says in words what the lanes draw
	logMin := 0
	if len(a.log) > 0 && free >= 3 {
		logMin = 1 + min(3, len(a.log), free-1) // the LOG title and its lines
	}
	free -= logMin
	showTopo, showClaim := topoNeeded, false
	if free > 0 && !topoNeeded && !a.multi() {
		showTopo, free = true, free-1
	}
	// the legend before the claim: the claim is on the picker, the legend says what is drawn here
	legend := legendLines(w, a)
	legendN := 0
	switch {
	case free >= len(legend):
		legendN = len(legend)
	case free >= 1:
		legendN = 1
	}
	free -= legendN
	claim := wrap(sDim.Render(s.step().Claim), w)
	switch {
	case free >= len(claim):
		showClaim, free = true, free-len(claim)
	case free > 0:
		showClaim, free, claim = true, free-1, []string{sDim.Render(ansi.Truncate(s.step().Claim, w, "…"))}
	}
	logN := max(0, min(free+logMin-1, len(a.log))) // the LOG title takes a line

	var out []string
	if showClaim {
		out = append(out, claim...)
	}
	out = append(out, status...)
	out = append(out, story...)
	out = append(out, a.shopLine(w), a.lockLine(w))
	out = append(out, nodes...)
	if showTopo {
		out = append(out, a.topoLine())
	}
	p.tl.a, p.tl.keep = a, a.named()
	p.tl.SetSize(w, lanes)
	out = append(out, p.tl.View()...)
	out = append(out, rew...)
	out = append(out, legend[:legendN]...)
	out = append(out, inv...)
	out = append(out, lesson...)
	if logN > 0 {
		out = append(out, sLabel.Render("LOG"))
		for _, l := range a.log[len(a.log)-logN:] {
			out = append(out, sDim.Render(ansi.Truncate(l, w, "…")))
		}
	}
	if len(out) > h-len(foot) { // never push the footer off the screen
		out = out[:max(h-len(foot), 0)]
	}
	for len(out) < h-len(foot) {
		out = append(out, "")
	}
	out = append(out, foot...)
	return strings.Join(out, "\n")
}

// statusLines say what runs, and the answer to the last key: on one line when both fit, else
// each wrapped on lines of its own (never cut short).
func (p *arenaPane) statusLines(w int) []string {
	mode, msg := "▶ "+p.mode(), oneLine(p.s.msg)
	switch {
	case msg == "":
		return wrap(sLabel.Render(mode), w)
	case ansi.StringWidth(mode)+2+ansi.StringWidth(msg) <= w:
		return []string{sLabel.Render(mode) + "  " + sWarn.Render(msg)}
	}
	l := wrap(sWarn.Render(msg), w)
	return append(wrap(sLabel.Render(mode), w), clip(l, 3, w)...)
}

// named are the buyers the first violation and the latest name, in order: the lanes the
// timeline keeps in view.
func (a *board) named() []int {
	fk, lk := a.firstLatest()
	if a.done && a.rep != nil && len(a.rep.Explain) > 0 {
		fk = a.rep.Explain[0].Kind
	}
	var out []int
	for _, k := range []steps.Kind{fk, lk} {
		for _, n := range a.violWho[k] {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// mode says what runs in the arena.
func (p *arenaPane) mode() string {
	a, s := p.s.ar, p.s
	switch {
	case a.prog != nil:
		return a.prog.mode(a.done)
	case a.scenario != "" && a.done && a.plays > 1:
		return fmt.Sprintf("scenario %s, finished: play %d of %d (each gap of the holder's Unlock in a play of its own; the verdict is every play's)", a.scenario, a.play, a.plays)
	case a.scenario != "" && a.done:
		return fmt.Sprintf("scenario %s, finished", a.scenario)
	case a.scenario != "" && a.play > 0:
		return fmt.Sprintf("scenario %s, play %d: %s", a.scenario, a.play, scenario.Describe(a.scenario))
	case a.scenario != "":
		return fmt.Sprintf("scenario %s: %s", a.scenario, scenario.Describe(a.scenario))
	case s.paused:
		return "live buyers, new orders PAUSED (space resumes)"
	case a.shelf <= 0:
		return "live buyers, SOLD OUT (r restocks)"
	}
	return "live buyers"
}

// lessonLines are what a finished scenario teaches, and where to go next (see handoff).
func (p *arenaPane) lessonLines(w int) []string {
	s := p.s
	a := s.ar
	if a == nil || !a.done {
		return nil
	}
	st := s.step()
	if a.err != nil {
		l := wrap(sBad.Render("the scenario could not run: ")+oneLine(a.err.Error()), w)
		return clip(l, 3, w)
	}
	if a.prog != nil {
		return a.prog.lessonLines(st, a.rep, w)
	}
	h := s.handoff
	switch {
	case (h == nil || h.From != s.cur) && a.rep != nil && !a.rep.Complete():
		return wrap(sWarn.Render(fmt.Sprintf("No verdict for %s under %s: ", course.Name(st), a.scenario))+"what the referee could not see is said above. Press b to replay, r for live buyers.", w)
	case h == nil || h.From != s.cur:
		return wrap(sGood.Render(fmt.Sprintf("%s held under %s. ", course.Title(st), a.scenario))+"Press b to replay, r for live buyers, or try the other faults.", w)
	}
	out := wrap(sBad.Render(fmt.Sprintf("✗ %s broke. ", course.Title(st)))+sLesson.Render(st.Lesson), w)
	return append(out, wrap(sWarn.Render(h.Sentence(s.steps)), w)...)
}

// footer is the keys that matter in the arena now.
func (p *arenaPane) footer(w int) []string {
	k, s := p.keys, p.s
	if s.ar == nil || s.ar.scenario == "" {
		// the faults on a line of their own, unless packing them with the rest saves a line
		short := k.ShortHelp()
		if s.paused {
			short = append([]key.Binding{k.Rewind}, short...)
		}
		rows := strings.Split(footer(w, k.faultRow(), short), "\n")
		if packed := strings.Split(footer(w, append(k.faultRow(), short...)), "\n"); len(packed) < len(rows) {
			return packed
		}
		return rows
	}
	var keys, way []key.Binding // the way on after a break is a row of its own
	if h := s.handoff; s.ar.done && h != nil && h.From == s.cur {
		way = wayKeys(s.steps, h)
		keys = append(keys, k.g.Break, k.Rewind, k.Reset, k.Code, k.Back, k.g.Help, k.g.Quit)
	} else {
		keys = []key.Binding{k.Reset, k.g.Break, k.g.Steps, k.Code, k.Back, k.g.Help, k.g.Quit}
		if s.ar.done {
			keys = append([]key.Binding{k.Rewind}, keys...)
		}
	}
	return strings.Split(footer(w, way, keys), "\n")
}

// wayKeys are the keys of the way on after a break, in the words of the hand-off's sentence (a
// side road that broke what its base holds is sent back to its base, its fix).
func wayKeys(all []*steps.Step, h *course.Handoff) []key.Binding {
	var keys []key.Binding
	add := func(i int, desc string) {
		jk := h.JumpKey(all, i)
		keys = append(keys, key.NewBinding(key.WithKeys(jk), key.WithHelp(jk, desc)))
	}
	if h.Base >= 0 {
		add(h.Base, course.Name(all[h.Base])+": back to the base, the fix")
	}
	if h.Next >= 0 {
		desc := course.Name(all[h.Next])
		if h.Next == h.Fix {
			desc += ": the fix"
		}
		add(h.Next, desc)
	}
	if h.Part >= 0 {
		add(h.Part, course.Name(all[h.Part])+": clears "+course.KindList(h.PartKinds))
	}
	if h.Fix >= 0 && h.Fix != h.Next && h.Fix != h.Base {
		add(h.Fix, course.Name(all[h.Fix])+": the fix")
	}
	return keys
}

// legendItems are the legend's items: the lanes' glyphs, then the marks (picture.Legend, less
// the page's own).
var legendItems = [][]string{
	{"█ inside", "░ works, no lock", "▓ OVERLAP", "═ holds", "· waits", "~ spins", "‖ frozen", "× crashed", "┄/▒ cut off", "─/═ lock free/held"},
	termMarks(),
}

// termMarks are the terminal's mark items: "G/S GET/SET stock".
func termMarks() []string {
	var out []string
	for _, g := range picture.Legend {
		if !g.Page {
			out = append(out, picture.Glyphs(g.Marks)+" "+g.Says)
		}
	}
	return out
}

// legendLines packs the timeline's legend into lines of w columns: the lanes' glyphs first, then
// the marks (picture.Legend), in one flow. Work without a lock is explained only where no lock is
// taken, spinning only where a lock is; a rare mark (a wake-up, a refused write, …) only once it
// was drawn.
func legendLines(w int, a *board) []string {
	items := slices.Clone(legendItems[0])
	items = slices.DeleteFunc(items, func(it string) bool {
		return (strings.HasPrefix(it, "░") && !a.noLock) || (strings.HasPrefix(it, "~") && a.noLock)
	})
	for _, g := range picture.Legend {
		if !g.Page && (!g.Rare || slices.ContainsFunc(g.Marks, a.drew)) {
			items = append(items, picture.Glyphs(g.Marks)+" "+g.Says)
		}
	}
	var out []string
	cur := ""
	for _, it := range items {
		if cur != "" && ansi.StringWidth(cur)+2+ansi.StringWidth(it) > w {
			out = append(out, sDim.Render(cur))
			cur = ""
		}
		if cur != "" {
			cur += "  "
		}
		cur += it
	}
	return append(out, sDim.Render(cur))
}
