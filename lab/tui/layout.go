package tui

import (
	"slices"
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

// footer shows the keys that matter on a screen: on one line of w columns when they fit (with
// short words for the longest, shortKeys, if that makes them fit), else each row of keys on lines
// of its own, as few as it needs and as even as they can be, so that no key ends up alone on a
// line. No key is ever cut off or split.
func footer(w int, rows ...[]key.Binding) string {
	var all []key.Binding
	for _, r := range rows {
		all = append(all, r...)
	}
	for _, short := range []bool{false, true} {
		if items := footItems(all, short); lineWidth(items) <= w {
			return footLines(items, w)[0]
		}
	}
	var out []string
	for _, r := range rows {
		items := footItems(r, false)
		if short := footItems(r, true); lineWidth(items) > w && lineWidth(short) <= w {
			items = short // the short words only where they save a line
		}
		out = append(out, footLines(items, w)...)
	}
	return strings.Join(out, "\n")
}

// shortKeys are the footer's shorter words for a key, where the whole footer would not fit on
// one line (? says each in full).
var shortKeys = map[string]string{"open the arena": "open", "go to step": "go to", "break it": "break",
	"hold orders": "hold", "2nd request": "2nd req", "lost reply": "reply", "unlock-race": "unlock"}

// footItem is one key as the footer shows it.
type footItem struct {
	text string
	w    int
}

// footItems are the enabled keys of bs as the footer shows them; short: in shortKeys' words.
func footItems(bs []key.Binding, short bool) []footItem {
	var out []footItem
	for _, b := range bs {
		if !b.Enabled() {
			continue
		}
		h := b.Help()
		if s, ok := shortKeys[h.Desc]; ok && short {
			h.Desc = s
		}
		out = append(out, footItem{paint(&sKey, h.Key) + " " + paint(&sDim, h.Desc), ansi.StringWidth(h.Key) + 1 + ansi.StringWidth(h.Desc)})
	}
	return out
}

// lineWidth is the width of items on one line.
func lineWidth(items []footItem) int {
	n := 0
	for i, it := range items {
		if i > 0 {
			n += 2
		}
		n += it.w
	}
	return n
}

// footLines lays items out on as few lines of w columns as they need, each line as wide as the
// others can make it (the narrowest width that needs no more lines), so the last is never one
// lone key.
func footLines(items []footItem, w int) []string {
	pack := func(limit int) [][]footItem {
		var lines [][]footItem
		var cur []footItem
		for _, it := range items {
			if len(cur) > 0 && lineWidth(append(cur, it)) > limit {
				lines, cur = append(lines, cur), nil
			}
			cur = append(cur, it)
		}
		if len(cur) > 0 {
			lines = append(lines, cur)
		}
		return lines
	}
	best := pack(w)
	for limit := w - 1; limit > 0; limit-- {
		l := pack(limit)
		if len(l) > len(best) {
			break
		}
		best = l
	}
	out := make([]string, len(best))
	for i, l := range best {
		parts := make([]string, len(l))
		for j, it := range l {
			parts[j] = it.text
		}
		out[i] = strings.Join(parts, "  ")
	}
	return out
}

// clip keeps the first n of lines (wrapped to w columns); a text cut short ends in … where it
// was cut, never mid-sentence without a sign.
func clip(lines []string, n, w int) []string {
	if len(lines) <= n {
		return lines
	}
	out := slices.Clone(lines[:n])
	out[n-1] = ansi.Truncate(out[n-1], max(w-1, 1), "") + "…"
	return out
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
