package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// codePane shows the current step's source, or its diff from the step before.
type codePane struct {
	s     *state
	keys  codeKeys
	vp    viewport.Model
	diff  bool   // the diff, not the source alone
	from  screen // where esc goes back to
	shown string // what the viewport holds: step slug, mode and width
	w, h  int
}

func newCodePane(s *state, g globalKeys) *codePane {
	return &codePane{s: s, keys: newCodeKeys(g), diff: true, vp: viewport.New(100, 26)}
}

// KeyMap is the pane's keys, for ? (and the footer's choice of them).
func (p *codePane) KeyMap() help.KeyMap { return p.keys }

// SetSize gives the code pane w columns and h lines.
func (p *codePane) SetSize(w, h int) { p.w, p.h = w, h }

// Update scrolls, switches between diff and source, or leaves.
func (p *codePane) Update(k tea.KeyMsg) tea.Msg {
	km := p.keys
	switch {
	case key.Matches(k, km.Arena):
		return openArena{}
	case key.Matches(k, km.Back):
		if p.from == scrArena {
			return openArena{clearMsg: true}
		}
		return showPicker{}
	case key.Matches(k, km.Diff):
		p.diff = !p.diff
		return nil
	}
	p.sync()
	km.scroll(&p.vp, k)
	return nil
}

// View is the summary line, the heading the model left (after a break), the code and the keys.
func (p *codePane) View() string {
	p.sync()
	w, h := p.w, p.h
	f := footer(w, p.keys.ShortHelp())
	b := []string{""}
	if p.s.msg != "" {
		l := wrap(sWarn.Render(oneLine(p.s.msg)), w)
		b = append(b, clip(l, 3, w)...)
	}
	p.vp.Width, p.vp.Height = w, max(h-len(b)-strings.Count(f, "\n")-1, 1)
	pct := fmt.Sprintf(" · %.0f%%", p.vp.ScrollPercent()*100)
	b[0] = sDim.Render(ansi.Truncate(p.summary(), w-len(pct), "…") + pct)
	b = append(b, p.vp.View())
	return strings.Join(b, "\n") + "\n" + f
}

// summary says what the pane shows: the source, or the diff and its size.
func (p *codePane) summary() string {
	s := p.s
	st := s.step()
	base := course.BaseOf(s.steps, s.cur)
	if base < 0 || !p.diff {
		return fmt.Sprintf("source of %s (%s)%s", course.Name(st), strings.Join(fileNames(st.Source), ", "), map[bool]string{true: " · d: diff from the step it grew from", false: ""}[base >= 0])
	}
	add, del := 0, 0
	for _, f := range p.files() {
		for _, op := range f.ops {
			switch op.op {
			case '+':
				add++
			case '-':
				del++
			}
		}
	}
	return fmt.Sprintf("diff from %s: +%d −%d lines · d: source only", course.Name(s.steps[base]), add, del)
}

// files is the current step's files, each as a diff from the step it grew from (or all kept).
func (p *codePane) files() []codeFile {
	s := p.s
	if b := course.BaseOf(s.steps, s.cur); b >= 0 && p.diff {
		return stepFiles(s.steps[b].Source, s.step().Source)
	}
	return stepFiles(nil, s.step().Source)
}

// sync fills the viewport when the step, the mode or the width changed.
func (p *codePane) sync() {
	w := p.w
	id := fmt.Sprintf("%s/%v/%d", p.s.step().Slug, p.diff, w)
	if id == p.shown {
		return
	}
	p.shown = id
	var b []string
	for _, f := range p.files() {
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
	p.vp.SetContent(strings.Join(b, "\n"))
	p.vp.GotoTop()
	if p.diff {
		// open on the first change
		for i, l := range b {
			if s := ansi.Strip(l); len(s) > 6 && (s[5] == '+' || s[5] == '-') {
				if i > 12 {
					p.vp.SetYOffset(i - 4)
				}
				break
			}
		}
	}
}

// wrapCode cuts a line of code into pieces of at most w columns, at spaces where it can; the
// continuation pieces keep the line's indentation, and a comment's pieces stay comments (//).
func wrapCode(s string, w int) []string {
	w = max(w, 10)
	if ansi.StringWidth(s) <= w {
		return []string{s}
	}
	body := strings.TrimLeft(s, " ")
	indent := s[:len(s)-len(body)]
	if len(indent) > w/2 {
		indent = ""
	}
	lead := ""
	if strings.HasPrefix(body, "// ") {
		lead, body = "// ", body[3:]
	}
	lines := strings.Split(ansi.Wrap(body, w-len(indent)-len(lead), ""), "\n")
	for i := range lines {
		lines[i] = indent + lead + lines[i]
	}
	return lines
}
