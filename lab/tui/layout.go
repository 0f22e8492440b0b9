package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

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

// footer shows the keys that matter on a screen, packed into as few lines of w columns as they
// need: no key is ever cut off. Each row starts a new line.
func footer(w int, rows ...[]key.Binding) string {
	var out []string
	for _, r := range rows {
		cur, curW := "", 0
		for _, b := range r {
			if !b.Enabled() {
				continue
			}
			h := b.Help()
			item := paint(&sKey, h.Key) + " " + paint(&sDim, h.Desc)
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

// wrap breaks s into lines of at most w columns (at least 10), trailing blanks trimmed.
func wrap(s string, w int) []string {
	lines := strings.Split(lipgloss.NewStyle().Width(max(w, 10)).Render(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines
}

// oneLine makes s one line: a newline becomes "; ".
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimRight(s, "\n")
	return strings.ReplaceAll(s, "\n", "; ")
}
