package main

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// picker is the list of steps: each with its claim, the chosen one with what still breaks it and
// how to break it.
type picker struct {
	s    *state
	keys pickerKeys
	w, h int
}

func newPicker(s *state, g globalKeys) *picker { return &picker{s: s, keys: newPickerKeys(g)} }

// SetSize gives the picker w columns and h lines.
func (p *picker) SetSize(w, h int) { p.w, p.h = w, h }

// Update answers a key with an intent (or nil).
func (p *picker) Update(k tea.KeyMsg) tea.Msg {
	switch {
	case key.Matches(k, p.keys.Open):
		return openArena{}
	case key.Matches(k, p.keys.Code):
		return openCode{from: scrPicker}
	case key.Matches(k, p.keys.Up):
		return goStep{p.s.cur - 1}
	case key.Matches(k, p.keys.Down):
		return goStep{p.s.cur + 1}
	}
	return nil
}

func (p *picker) View() string {
	w, h, s := p.w, p.h, p.s
	b := []string{""}
	all := h+1 >= 2*len(s.steps)+9
	for i, st := range s.steps {
		line := fmt.Sprintf("  %d  %s", st.Number, st.Title)
		if i == s.cur {
			line = sSel.Render(fmt.Sprintf("▸ %d  %s", st.Number, st.Title))
		}
		b = append(b, line)
		if all || i == s.cur {
			b = append(b, sDim.Render("     "+ansi.Truncate(st.Claim, w-6, "…")))
		}
	}
	st := s.step()
	b = append(b, "")
	b = append(b, wrap("Still breaks: "+st.Breaks, w)...)
	if st.BreakWith != "" {
		b = append(b, sWarn.Render(ansi.Truncate(fmt.Sprintf("Try: %s  (b plays %q)", st.Hint, st.BreakWith), w, "…")))
	}
	f := footer(w, p.keys.ShortHelp())
	for len(b) < h-1-strings.Count(f, "\n") {
		b = append(b, "")
	}
	b = append(b, f)
	return strings.Join(b, "\n")
}
