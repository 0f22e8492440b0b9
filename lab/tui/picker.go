package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// picker is the list of steps: each with its claim when there is room, the chosen one with where
// it grew from, what still breaks it and how to break it. A list longer than the screen scrolls
// with the cursor.
type picker struct {
	s    *state
	keys pickerKeys
	w, h int
	page int // steps in the last window drawn: what pgup and pgdn move by
}

func newPicker(s *state, g globalKeys) *picker {
	return &picker{s: s, keys: newPickerKeys(g), page: 5}
}

// KeyMap is the pane's keys, for ? (and the footer's choice of them).
func (p *picker) KeyMap() help.KeyMap { return p.keys }

// SetSize gives the picker w columns and h lines.
func (p *picker) SetSize(w, h int) { p.w, p.h = w, h }

// Update answers a key with an intent (or nil).
func (p *picker) Update(k tea.KeyMsg) tea.Msg {
	km, cur, last := p.keys, p.s.cur, len(p.s.steps)-1
	switch {
	case key.Matches(k, km.Open):
		return openArena{}
	case key.Matches(k, km.Code):
		return openCode{from: scrPicker}
	case key.Matches(k, km.Up):
		return goStep{cur - 1}
	case key.Matches(k, km.Down):
		return goStep{cur + 1}
	case key.Matches(k, km.PageUp):
		return goStep{max(cur-p.page, 0)}
	case key.Matches(k, km.PageDown):
		return goStep{min(cur+p.page, last)}
	case key.Matches(k, km.First):
		return goStep{0}
	case key.Matches(k, km.Last):
		return goStep{last}
	}
	return nil
}

// View is the list, then the chosen step's details, the last answer and the keys.
func (p *picker) View() string {
	w, h, s := p.w, p.h, p.s
	st := s.step()
	var detail []string
	if b := course.BaseOf(s.steps, s.cur); b >= 0 {
		detail = append(detail, wrap(fmt.Sprintf("Grows from %s: %s", course.Name(s.steps[b]), st.Fixes), w)...)
	} else {
		detail = append(detail, wrap(st.Fixes, w)...)
	}
	detail = append(detail, wrap("Still breaks: "+st.Breaks, w)...)
	if st.BreakWith != "" {
		detail = append(detail, wrap(sWarn.Render(fmt.Sprintf("Try: %s  (b plays %q)", st.Hint, st.BreakWith)), w)...)
	}
	if s.isLearner(st) {
		for _, n := range s.shared {
			detail = append(detail, wrap(sWarn.Render("Note: "+n+"."), w)...)
		}
	}
	if s.msg != "" {
		m := wrap(sWarn.Render(oneLine(s.msg)), w)
		detail = append(detail, clip(m, 2, w)...)
	}
	f := footer(w, p.keys.ShortHelp())
	room := h - 2 - len(detail) - 1 - strings.Count(f, "\n") // blank lines above and below the list
	b := []string{""}
	b = append(b, p.list(w, room)...)
	b = append(b, "")
	b = append(b, detail...)
	for len(b) < h-1-strings.Count(f, "\n") {
		b = append(b, "")
	}
	return strings.Join(append(b, f), "\n")
}

// list is the steps in room lines: every claim when they all fit, else the chosen step's only,
// and a window around the cursor when the titles alone do not fit.
func (p *picker) list(w, room int) []string {
	s := p.s
	n := len(s.steps)
	all := 2*n <= room
	start, end := 0, n
	if n+1 > room {
		count := max(room-3, 1) // the chosen step's claim, and a line above and below saying more
		start = max(0, min(s.cur-count/2, n-count))
		end = start + count
	}
	p.page = max(end-start-1, 1)
	numW := len(fmt.Sprint(course.Last(s.steps)))
	var out []string
	if start > 0 {
		out = append(out, sDim.Render(fmt.Sprintf("     ↑ %d more", start)))
	}
	for i := start; i < end; i++ {
		st := s.steps[i]
		num := fmt.Sprint(st.Number)
		if !course.Numbered(st) {
			num = "·"
		}
		line := fmt.Sprintf("  %*s  %s", numW, num, st.Title)
		if i == s.cur {
			line = fmt.Sprintf("▸ %*s  %s", numW, num, st.Title)
		}
		switch b := course.BaseOf(s.steps, i); {
		case b >= 0 && !course.Numbered(st):
			line += "  ← beside " + course.Name(s.steps[b])
		case b >= 0 && s.steps[b].Number != st.Number-1:
			line += "  ← grows from " + course.Name(s.steps[b])
		}
		line = ansi.Truncate(line, w, "…")
		if i == s.cur {
			line = sSel.Render(line)
		}
		out = append(out, line)
		if all || i == s.cur {
			pad := strings.Repeat(" ", numW+4)
			out = append(out, sDim.Render(pad+ansi.Truncate(st.Claim, w-len(pad)-1, "…")))
		}
	}
	if end < n {
		out = append(out, sDim.Render(fmt.Sprintf("     ↓ %d more", n-end)))
	}
	return out
}
