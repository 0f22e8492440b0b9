package main

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/steps"
)

var (
	sBold   = lipgloss.NewStyle().Bold(true)
	sKey    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("252"))
	sDim    = lipgloss.NewStyle().Foreground(lipgloss.Color("245"))
	sTitle  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("212"))
	sStep   = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("212"))
	sGood   = lipgloss.NewStyle().Foreground(lipgloss.Color("42"))
	sBad    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("196"))
	sWarn   = lipgloss.NewStyle().Foreground(lipgloss.Color("214"))
	sSel    = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("212"))
	sLabel  = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("111"))
	sAdd    = lipgloss.NewStyle().Foreground(lipgloss.Color("42"))
	sDel    = lipgloss.NewStyle().Foreground(lipgloss.Color("196"))
	sLesson = lipgloss.NewStyle().Foreground(lipgloss.Color("229"))

	// timeline cells, by state
	sCell = [...]lipgloss.Style{
		stIdle:    lipgloss.NewStyle(),
		stWait:    lipgloss.NewStyle().Foreground(lipgloss.Color("243")),
		stHold:    lipgloss.NewStyle().Foreground(lipgloss.Color("39")),
		stInside:  lipgloss.NewStyle().Foreground(lipgloss.Color("42")),
		stOverlap: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("196")),
		stFrozen:  lipgloss.NewStyle().Foreground(lipgloss.Color("75")),
		stCrashed: lipgloss.NewStyle().Foreground(lipgloss.Color("160")),
	}
	sMark = [...]lipgloss.Style{
		stIdle:    lipgloss.NewStyle().Bold(true),
		stWait:    lipgloss.NewStyle().Bold(true),
		stHold:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("39")),
		stInside:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("42")),
		stOverlap: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("231")).Background(lipgloss.Color("196")),
		stFrozen:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("75")),
		stCrashed: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("160")),
	}
	glyph = [...]rune{stIdle: ' ', stWait: '·', stHold: '═', stInside: '█', stOverlap: '▓', stFrozen: '‖', stCrashed: '×'}
)

func (m *model) View() string {
	w, h := max(m.width, 20), max(m.height, 8)
	var s string
	switch {
	case m.help:
		s = m.helpView(w, h)
	case m.scr == scrPicker:
		s = m.pickerView(w, h)
	case m.scr == scrCode:
		s = m.codeView(w, h)
	default:
		s = m.arenaView(w, h)
	}
	return fit(s, w, h)
}

// fit cuts s to w columns and h lines, so a small terminal never scrolls.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		if len(l) > w && quickWidth(l) > w {
			lines[i] = ansi.Truncate(l, w, "…")
		}
	}
	return strings.Join(lines, "\n")
}

// quickWidth is the display width of s, counted fast for the lab's own lines (escape codes and
// narrow runes); text with East Asian runes goes through ansi.StringWidth.
func quickWidth(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			if r >= 0x40 && r <= 0x7e && r != '[' {
				esc = false
			}
		case r == 0x1b:
			esc = true
		case r >= 0x2e80:
			return ansi.StringWidth(s)
		default:
			n++
		}
	}
	return n
}

// header is the top line of every screen: where the learner is.
func (m *model) header(w int) string {
	st := m.step()
	left := sTitle.Render("lockstep") + " " + sStep.Render(fmt.Sprintf(" Step %d/%d ", st.Number, len(m.steps))) + " "
	// The title is what matters: shorten the status before the title.
	var status string
	var room int
	for short := 0; short < 3; short++ {
		status = m.status(short)
		room = w - lipgloss.Width(left) - ansi.StringWidth(status) - 2
		if room >= ansi.StringWidth(st.Title) {
			break
		}
	}
	if room < 12 {
		return left + sBold.Render(st.Title)
	}
	title := ansi.Truncate(st.Title, room, "…")
	return left + sBold.Render(title) + strings.Repeat(" ", room-ansi.StringWidth(title)+2) + sDim.Render(status)
}

// status says the backend, the pace and the buyers; short 1 and 2 say it in fewer columns.
func (m *model) status(short int) string {
	be := m.opt.backend
	if be == "" {
		be = "embedded"
	}
	speed := speedText(m.slow)
	if short > 0 {
		speed = fmt.Sprintf("%g×, TTL %s", m.slow, roundDur(m.timing().TTL))
	}
	parts := []string{be, speed}
	if short > 1 {
		parts = parts[1:]
	}
	if m.ar != nil && m.ar.scenario == "" {
		parts = append(parts, fmt.Sprintf("%d buyers", m.buyers))
	}
	return strings.Join(parts, " · ")
}

// footer shows the keys that matter on this screen, packed into as few lines of w columns as
// they need: no key is ever cut off.
func (m *model) footer(w int, rows ...[]key.Binding) string {
	var out []string
	for _, r := range rows {
		cur, curW := "", 0
		for _, b := range r {
			if !b.Enabled() {
				continue
			}
			h := b.Help()
			item := sKey.Render(h.Key) + " " + sDim.Render(h.Desc)
			iw := ansi.StringWidth(h.Key) + 1 + ansi.StringWidth(h.Desc)
			if curW > 0 && curW+2+iw > w {
				out = append(out, cur)
				cur, curW = "", 0
			}
			if curW > 0 {
				cur += "  "
				curW += 2
			}
			cur += item
			curW += iw
		}
		if curW > 0 {
			out = append(out, cur)
		}
	}
	return strings.Join(out, "\n")
}

func wrap(s string, w int) []string {
	lines := strings.Split(lipgloss.NewStyle().Width(max(w, 10)).Render(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// ---- the picker ----

func (m *model) pickerView(w, h int) string {
	var b []string
	b = append(b, m.header(w), "")
	all := h >= 2*len(m.steps)+9
	for i, st := range m.steps {
		line := fmt.Sprintf("  %d  %s", st.Number, st.Title)
		if i == m.cur {
			line = sSel.Render(fmt.Sprintf("▸ %d  %s", st.Number, st.Title))
		}
		b = append(b, line)
		if all || i == m.cur {
			b = append(b, sDim.Render("     "+ansi.Truncate(st.Claim, w-6, "…")))
		}
	}
	st := m.step()
	b = append(b, "")
	for _, l := range wrap("Still breaks: "+st.Breaks, w) {
		b = append(b, l)
	}
	if st.BreakWith != "" {
		b = append(b, sWarn.Render(ansi.Truncate(fmt.Sprintf("Try: %s  (b plays %q)", st.Hint, st.BreakWith), w, "…")))
	}
	k := m.keys
	f := m.footer(w, []key.Binding{k.Steps, k.Jump, k.Open, k.Break, k.Code, k.Help, k.Quit})
	for len(b) < h-1-strings.Count(f, "\n") {
		b = append(b, "")
	}
	b = append(b, f)
	return strings.Join(b, "\n")
}

// ---- the help screen ----

func (m *model) helpView(w, h int) string {
	b := []string{sBold.Render("Keys"), ""}
	m.hm.Width = w
	b = append(b, strings.Split(m.hm.FullHelpView(m.keys.FullHelp()), "\n")...)
	b = append(b, "", sBold.Render("The timeline"))
	b = append(b, wrap("One lane per buyer, one for the lock server; time runs left to right, one column = TTL/20. "+
		"Buyer lanes: █ inside the critical section, ▓ inside while another buyer is inside too (an overlap), "+
		"═ holds the lock outside it, · waiting (on steps 2–6, which never wait: a refused attempt), ~ spinning on SET NX, ‖ frozen, × crashed. "+
		"Marks: G GET stock, S SET stock, o GET lock (the owner check), D DEL lock, L Lua unlock, P TTL renewal. "+
		"Lock lane: ─ free, the owner's number while held, x expired, ! deleted by a non-owner, F failover, ? lost in the failover.", w)...)
	b = append(b, "", sBold.Render("Faults"))
	b = append(b, wrap("Faults hit the current holder: the buyer inside the critical section, or else the lock's owner. "+
		"crash: its process dies, no deferred code runs. error: its work returns an error. slow: its work takes 3×TTL. "+
		"pause: stop-the-world for 3×TTL. unlock-race: it freezes just before the command that deletes its lock. "+
		"failover: the next lock write skips the replica, then the primary dies. nested: its work calls a helper that takes the same lock. "+
		"b replays the scenario that breaks this step; after it breaks, → opens the next step's diff: the fix.", w)...)
	keys := []key.Binding{key.NewBinding(key.WithKeys("?"), key.WithHelp("? / esc", "close help")), m.keys.Quit}
	body := h - 2 - 1
	if len(b) > body {
		keys = append([]key.Binding{key.NewBinding(key.WithKeys("down"), key.WithHelp("↑↓", "scroll"))}, keys...)
	}
	f := m.footer(w, keys)
	body = h - 2 - 1 - strings.Count(f, "\n")
	m.helpOff = max(0, min(m.helpOff, len(b)-body))
	b = b[m.helpOff:]
	if len(b) > body {
		b = b[:max(body, 0)]
	}
	for len(b) < body {
		b = append(b, "")
	}
	return m.header(w) + "\n\n" + strings.Join(b, "\n") + "\n" + f
}

// ---- the code pane ----

func (m *model) codeView(w, h int) string {
	m.syncCode()
	k := m.keys
	arena := key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab/c", "arena"))
	f := m.footer(w, []key.Binding{k.Scroll, k.Diff, k.Steps, arena, k.Break, k.Back, k.Help, k.Quit})
	b := []string{m.header(w), ""}
	if m.msg != "" {
		b = append(b, sWarn.Render(ansi.Truncate(oneLine(m.msg), w, "…")))
	}
	m.code.Width, m.code.Height = w, max(h-len(b)-strings.Count(f, "\n")-1, 1)
	pct := fmt.Sprintf(" · %.0f%%", m.code.ScrollPercent()*100)
	b[1] = sDim.Render(ansi.Truncate(m.codeSummary(), w-len(pct), "…") + pct)
	b = append(b, m.code.View())
	return strings.Join(b, "\n") + "\n" + f
}

func (m *model) codeSummary() string {
	st := m.step()
	if m.cur == 0 || !m.codeDiff {
		return fmt.Sprintf("source of step %d (%s)%s", st.Number, strings.Join(fileNames(st.Source), ", "), map[bool]string{true: " · d: diff from the step before", false: ""}[m.cur > 0])
	}
	add, del := 0, 0
	for _, f := range m.codeFiles() {
		for _, op := range f.ops {
			switch op.op {
			case '+':
				add++
			case '-':
				del++
			}
		}
	}
	return fmt.Sprintf("diff from step %d: +%d −%d lines · d: source only", st.Number-1, add, del)
}

type codeFile struct {
	name string
	ops  []diffOp
}

func fileNames(src fs.FS) []string {
	if src == nil {
		return nil
	}
	ents, _ := fs.ReadDir(src, ".")
	var out []string
	for _, e := range ents {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), "_test.go") {
			out = append(out, e.Name())
		}
	}
	return out
}

func readLines(src fs.FS, name string) []string {
	if src == nil {
		return nil
	}
	b, err := fs.ReadFile(src, name)
	if err != nil {
		return nil
	}
	s := strings.TrimRight(strings.ReplaceAll(string(b), "\t", "    "), "\n")
	return strings.Split(s, "\n")
}

// codeFiles is the current step's files, each as a diff from the step before (or all kept).
func (m *model) codeFiles() []codeFile {
	st := m.step()
	var prev fs.FS
	if m.cur > 0 && m.codeDiff {
		prev = m.steps[m.cur-1].Source
	}
	names := map[string]bool{}
	for _, n := range fileNames(st.Source) {
		names[n] = true
	}
	for _, n := range fileNames(prev) {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []codeFile
	for _, n := range sorted {
		if prev == nil { // the source alone: every line kept
			var ops []diffOp
			for _, l := range readLines(st.Source, n) {
				ops = append(ops, diffOp{' ', l})
			}
			out = append(out, codeFile{n, ops})
			continue
		}
		out = append(out, codeFile{n, lineDiff(readLines(prev, n), readLines(st.Source, n))})
	}
	return out
}

// syncCode fills the viewport when the step, the mode or the width changed.
func (m *model) syncCode() {
	id := fmt.Sprintf("%s/%v/%d", m.step().Slug, m.codeDiff, max(m.width, 20))
	if id == m.codeFor {
		return
	}
	m.codeFor = id
	w := max(m.width, 20)
	var b []string
	for _, f := range m.codeFiles() {
		b = append(b, sLabel.Render("── "+f.name+" "+strings.Repeat("─", max(0, w-len(f.name)-5))))
		n := 0
		for _, op := range f.ops {
			if op.op != '-' {
				n++
			}
			num := fmt.Sprintf("%4d ", n)
			if op.op == '-' {
				num = "     "
			}
			// Long lines wrap (a doc comment's Hazard sentence is the point of it); ↪ marks the
			// continuation.
			for i, part := range wrapCode(op.text, w-len(num)-2) {
				line := num + string(op.op) + " " + part
				if i > 0 {
					line = "   ↪ " + string(op.op) + " " + part
				}
				switch op.op {
				case '+':
					line = sAdd.Render(line)
				case '-':
					line = sDel.Render(line)
				}
				b = append(b, line)
			}
		}
		b = append(b, "")
	}
	m.code.SetContent(strings.Join(b, "\n"))
	m.code.GotoTop()
	if m.codeDiff {
		// open on the first change
		for i, l := range b {
			if s := ansi.Strip(l); len(s) > 6 && (s[5] == '+' || s[5] == '-') {
				if i > 12 {
					m.code.SetYOffset(i - 4)
				}
				break
			}
		}
	}
}

// wrapCode cuts a line of code into pieces of at most w columns, at spaces where it can; the
// continuation pieces keep the line's indentation.
func wrapCode(s string, w int) []string {
	w = max(w, 10)
	if ansi.StringWidth(s) <= w {
		return []string{s}
	}
	indent := len(s) - len(strings.TrimLeft(s, " "))
	if indent > w/2 {
		indent = 0
	}
	pad := strings.Repeat(" ", indent)
	lines := strings.Split(ansi.Wrap(strings.TrimLeft(s, " "), w-indent, ""), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return lines
}

// ---- the arena ----

func (m *model) arenaView(w, h int) string {
	a := m.ar
	if a == nil {
		return m.header(w) + "\n\n" + sWarn.Render(m.msg)
	}
	st := m.step()
	top := []string{m.header(w), sDim.Render(ansi.Truncate(st.Claim, w, "…"))}
	mode := "live buyers"
	switch {
	case m.paused:
		mode = "live buyers, new orders PAUSED (space resumes)"
	case a.scenario == "" && a.shelf <= 0:
		mode = "live buyers, SOLD OUT (r restocks)"
	}
	if a.scenario != "" {
		mode = fmt.Sprintf("scenario %s: %s", a.scenario, steps.Describe[a.scenario])
		if a.done {
			mode = fmt.Sprintf("scenario %s, finished", a.scenario)
		}
	}
	msg := ansi.Truncate(sLabel.Render("▶ "+mode)+"  "+sWarn.Render(oneLine(m.msg)), w, "…")
	top = append(top, msg, a.shopLine(), a.lockLine(w), a.topoLine())

	var bottom []string
	bottom = append(bottom, a.invariantLines(w)...)
	lesson := m.lessonLines(w)
	foot := m.arenaFooter(w)

	rest := h - len(top) - len(bottom) - len(lesson) - len(foot)
	legend := legendLines(w)
	nb := len(a.lanes)
	need := 2 + nb // ruler, lock lane, buyers
	legendN := 0
	if rest-need >= len(legend) {
		legendN = len(legend)
	} else if rest-need >= 1 {
		legendN = 1
	}
	lanes := min(nb, rest-2-legendN)
	logN := max(0, min(rest-(2+lanes+legendN)-1, 7, len(a.log))) // the LOG title takes a line
	mid := a.timeline(w, max(lanes, 0))
	mid = append(mid, legend[:legendN]...)
	var out []string
	out = append(out, top...)
	out = append(out, mid...)
	out = append(out, bottom...)
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

func (a *arena) lockLine(w int) string {
	if a.noLock {
		return sLabel.Render("LOCK") + " none — step 1 takes no lock: every buyer goes straight in"
	}
	owner := "free"
	if a.owner != 0 {
		owner = fmt.Sprintf("owner buyer %d", a.owner)
	}
	val := ""
	ttl := ""
	switch {
	case a.lockHeld && a.lockTTL < 0:
		val, ttl = fmt.Sprintf(" = %q", ansi.Truncate(a.lockVal, 14, "…")), sWarn.Render("no TTL: held until deleted")
	case a.lockHeld:
		val, ttl = fmt.Sprintf(" = %q", ansi.Truncate(a.lockVal, 14, "…")), fmt.Sprintf("TTL %.2fs left", a.lockTTL.Seconds())
	case a.owner != 0 && !a.done && a.lockReadAt > a.ownedAt+a.timing.TTL*9/10:
		ttl = sWarn.Render("gone from Redis (expired): buyer " + fmt.Sprint(a.owner) + " does not know yet")
	}
	s := fmt.Sprintf("%s %s · %s%s", sLabel.Render("LOCK"), a.lockKey, owner, val)
	if ttl != "" {
		s += " · " + ttl
	}
	return ansi.Truncate(s, w, "…")
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

func (m *model) lessonLines(w int) []string {
	a := m.ar
	if a == nil || !a.done {
		return nil
	}
	st := m.step()
	var out []string
	if a.err != nil {
		l := wrap(sBad.Render("the scenario could not run: ")+oneLine(a.err.Error()), w)
		return l[:min(len(l), 3)]
	}
	if !m.broke {
		return wrap(sGood.Render(fmt.Sprintf("Step %d held under %s. ", st.Number, a.scenario))+"Press b to replay, r for live buyers, or try the other faults.", w)
	}
	out = append(out, wrap(sBad.Render(fmt.Sprintf("✗ Step %d broke. ", st.Number))+sLesson.Render(st.Lesson), w)...)
	if m.cur+1 < len(m.steps) {
		nx := m.steps[m.cur+1]
		out = append(out, sWarn.Render(ansi.Truncate(fmt.Sprintf("press → for step %d (%s): its code pane shows the fix as a diff", nx.Number, nx.Title), w, "…")))
	} else {
		out = append(out, sWarn.Render(ansi.Truncate("That was the last step: no lock on one Redis survives this (docs/curriculum.md, module 6).", w, "…")))
	}
	return out
}

func (m *model) arenaFooter(w int) []string {
	k := m.keys
	if m.ar != nil && m.ar.scenario != "" {
		if m.ar.done && m.broke && m.cur+1 < len(m.steps) {
			return strings.Split(m.footer(w, []key.Binding{
				key.NewBinding(key.WithKeys("right"), key.WithHelp("→", fmt.Sprintf("step %d: the fix", m.steps[m.cur+1].Number))),
				k.Break, k.Reset, k.Code, k.Back, k.Help, k.Quit}), "\n")
		}
		return strings.Split(m.footer(w, []key.Binding{k.Reset, k.Break, k.Steps, k.Code, k.Back, k.Help, k.Quit}), "\n")
	}
	return strings.Split(m.footer(w,
		[]key.Binding{k.Crash, k.Error, k.Slow, k.Pause, k.UnlockRace, k.Failover, k.Nested},
		[]key.Binding{k.Break, k.Hold, k.Reset, k.Buyers, k.Speed, k.Steps, k.Code, k.Help, k.Quit}), "\n")
}

var legendItems = [][]string{
	{"█ inside", "▓ OVERLAP", "═ holds", "· refused/waiting", "~ spinning", "‖ frozen", "× crashed", "─ lock free"},
	{"G/S GET/SET stock", "o GET owner", "D DEL", "L Lua", "P renew", "x expired", "! foreign DEL", "F/? failover/lost"},
}

// legendLines packs the timeline's legend into lines of w columns: the lanes' glyphs first, then
// the marks, in one flow.
func legendLines(w int) []string {
	var out []string
	cur := ""
	for _, items := range legendItems {
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
	}
	return append(out, sDim.Render(cur))
}

const (
	labelW  = 6
	statusW = 11
)

// timeline draws the ruler, the lock lane and up to rows buyer lanes.
func (a *arena) timeline(w, rows int) []string {
	cols := min(max(w-labelW-statusW, 10), ringN)
	nowB := a.bucket(a.now)
	first := max(0, nowB-int64(cols)+1)
	out := []string{a.ruler(first, cols)}
	lockStatus := "free"
	if a.noLock {
		lockStatus = "no lock"
	}
	if a.owner != 0 {
		lockStatus = fmt.Sprintf("buyer %d", a.owner)
	}
	out = append(out, a.laneLine(a.lock, "lock", first, nowB, cols, lockStatus))
	lanes := a.lanes
	show := rows
	if len(lanes) > rows && rows > 0 {
		show = rows - 1
		// Too many lanes: leave out those with nothing on screen (retired buyers), in order.
		var busy []*lane
		for _, l := range lanes {
			if a.active(l, first, nowB) {
				busy = append(busy, l)
			}
		}
		lanes = busy
	}
	for i := 0; i < show && i < len(lanes); i++ {
		l := lanes[i]
		out = append(out, a.laneLine(l, fmt.Sprintf("b%d", l.n), first, nowB, cols, a.laneStatus(l, nowB)))
	}
	if n := len(a.lanes) - min(show, len(lanes)); n > 0 {
		out = append(out, sDim.Render(fmt.Sprintf("      … %d more buyers not shown (a taller terminal shows them)", n)))
	}
	return out
}

// active tells whether lane l has anything but idle cells between buckets from and to.
func (a *arena) active(l *lane, from, to int64) bool {
	if l.state() != stIdle {
		return true
	}
	for b := max(from, to-ringN+1); b <= to; b++ {
		if c := l.at(b); c != nil && (c.st != stIdle || c.marks[0] != 0) {
			return true
		}
	}
	return false
}

func (a *arena) laneStatus(l *lane, nowB int64) string {
	st := l.state()
	switch {
	case st == stOverlap:
		return sBad.Render("▓ OVERLAP")
	case st == stWait:
		if c := l.at(nowB); (c != nil && c.spins >= 2) || a.spinning(l, nowB) {
			return sCell[stWait].Render("~ spinning")
		}
	}
	return sCell[st].Render(string(glyph[st]) + " " + [...]string{"idle", "waiting", "holds", "inside", "OVERLAP", "frozen", "crashed"}[st])
}

func (a *arena) spinning(l *lane, nowB int64) bool {
	if c := l.at(nowB - 1); c != nil && c.spins >= 2 {
		return true
	}
	return false
}

func (a *arena) ruler(first int64, cols int) string {
	ttlCols := max(int64(a.timing.TTL/a.res), 1)
	buf := []rune(strings.Repeat(" ", cols))
	for c := 0; c < cols; c++ {
		b := first + int64(c)
		if b%ttlCols == 0 {
			buf[c] = '┊'
			lbl := []rune(fmtSec(time.Duration(b) * a.res))
			if c+len(lbl) >= cols {
				continue
			}
			for j, r := range lbl {
				if c+1+j < cols {
					buf[c+1+j] = r
				}
			}
			c += len(lbl)
		}
	}
	return sDim.Render(fmt.Sprintf("%-*s%s", labelW, "time", string(buf)))
}

func fmtSec(d time.Duration) string {
	s := fmt.Sprintf("%.1f", d.Seconds())
	s = strings.TrimSuffix(s, ".0")
	return s + "s"
}

// laneLine draws one lane; runs of cells with one style are rendered at once (it is the hot path
// of View with many buyers).
func (a *arena) laneLine(l *lane, label string, first, nowB int64, cols int, status string) string {
	var sb strings.Builder
	sb.WriteString(fmt.Sprintf("%-*s", labelW, label))
	var run []rune
	var runStyle *lipgloss.Style
	flush := func() {
		if len(run) > 0 {
			if runStyle == nil {
				sb.WriteString(string(run))
			} else {
				pre, post := styleCodes(runStyle)
				sb.WriteString(pre)
				sb.WriteString(string(run))
				sb.WriteString(post)
			}
			run = run[:0]
		}
	}
	l.at(nowB)
	var spill [8]byte // marks waiting for a column
	ns := 0
	for c := 0; c < cols; c++ {
		b := first + int64(c)
		r, style := ' ', (*lipgloss.Style)(nil)
		if b > nowB && ns > 0 {
			r, style = rune(spill[0]), &sBold
			copy(spill[:], spill[1:ns])
			ns--
		} else if b <= nowB {
			if cl := l.at(b); cl != nil {
				for _, mk := range cl.marks {
					if mk != 0 && ns < len(spill) {
						spill[ns] = mk
						ns++
					}
				}
				r, style = a.cellGlyph(l, cl)
				if ns > 0 {
					r = rune(spill[0])
					copy(spill[:], spill[1:ns])
					ns--
					if l.n == 0 {
						style = &sBad
					} else {
						style = &sMark[cl.st]
					}
				}
			}
		}
		if style != runStyle {
			flush()
			runStyle = style
		}
		run = append(run, r)
	}
	flush()
	sb.WriteString(" ")
	sb.WriteString(status)
	return sb.String()
}

// styleCodes returns the escape codes st puts around a text, found once per style: lipgloss'
// Render measures and pads its text, which is most of View's time with many lanes.
func styleCodes(st *lipgloss.Style) (string, string) {
	codesMu.Lock()
	defer codesMu.Unlock()
	if c, ok := codes[st]; ok {
		return c[0], c[1]
	}
	r := st.Render("X")
	i := strings.IndexByte(r, 'X')
	c := [2]string{r[:i], r[i+1:]}
	codes[st] = c
	return c[0], c[1]
}

var (
	codesMu sync.Mutex
	codes   = map[*lipgloss.Style][2]string{}
)

var sLockHeld = lipgloss.NewStyle().Foreground(lipgloss.Color("39"))
var sLockFree = lipgloss.NewStyle().Foreground(lipgloss.Color("238"))

func (a *arena) cellGlyph(l *lane, c *tcell) (rune, *lipgloss.Style) {
	if l.n == 0 { // the lock server
		switch {
		case a.noLock:
			return ' ', nil
		case c.own != 0:
			return rune('0' + c.own%10), &sLockHeld
		}
		return '─', &sLockFree
	}
	if c.st == stWait && c.spins >= 2 {
		return '~', &sCell[stWait]
	}
	if c.st == stIdle {
		return ' ', nil
	}
	return glyph[c.st], &sCell[c.st]
}
