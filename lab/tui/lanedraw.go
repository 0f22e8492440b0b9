package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockstep-lab/lockstep/lab/picture"
)

// column is one column of a lane as drawn.
type column struct {
	r     rune
	style *lipgloss.Style
	mark  bool
}

// laneLine draws one lane: each column's glyph, a bucket's command marks spilling into the
// columns after it, and on the lock lane the owner's number at the start of each hold. Runs of
// one style are rendered at once (it is the hot path of View with many buyers).
func (t *timeline) laneLine(l *lane, label string, first, nowB int64, cols int, status string) string {
	cells := t.cells(l, first, nowB, cols)
	if l.n <= 0 {
		t.ownerNumbers(l, cells, first, nowB)
	}
	if t.cur >= 0 && t.cur < len(cells) { // the rewind cursor's column
		if cells[t.cur].r == ' ' {
			cells[t.cur].r = '│'
		}
		cells[t.cur].style = &sCursor
	}
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
	for _, c := range cells {
		if c.style != runStyle {
			flush()
			runStyle = c.style
		}
		run = append(run, c.r)
	}
	flush()
	sb.WriteString(" ")
	sb.WriteString(status)
	return sb.String()
}

// cells lays out one lane's columns: buckets first.. (nowB the last with a state; the columns
// after it take the marks that spill past now).
func (t *timeline) cells(l *lane, first, nowB int64, cols int) []column {
	t.buf = slices.Grow(t.buf[:0], cols)[:cols]
	out := t.buf
	var spill [8]picture.ID // marks waiting for a column
	ns := 0
	for c := range out {
		b := first + int64(c)
		out[c] = column{r: ' '}
		if b > nowB && ns > 0 {
			out[c] = column{r: picture.Marks[spill[0]].Glyph, style: &sBold, mark: true}
			copy(spill[:], spill[1:ns])
			ns--
		} else if b <= nowB {
			if cl := t.bs.at(l.n, b); cl != nil {
				for _, mk := range cl.marks {
					if mk != picture.None && ns < len(spill) {
						spill[ns] = mk
						ns++
					}
				}
				out[c].r, out[c].style = t.cellGlyph(l, cl)
				if ns > 0 {
					out[c].r, out[c].mark = picture.Marks[spill[0]].Glyph, true
					copy(spill[:], spill[1:ns])
					ns--
					if l.n <= 0 {
						out[c].style = &sBad
					} else {
						out[c].style = &sMark[cl.st]
					}
				}
			}
		}
	}
	return out
}

// ownerNumbers writes the owner's whole number at the start of each hold of the lock lane (and at
// its left edge), in the first columns no mark took; a hold too short for the number keeps its ═.
func (t *timeline) ownerNumbers(l *lane, cells []column, first, nowB int64) {
	own := func(c int) int {
		if b := first + int64(c); b <= nowB {
			if cl := t.bs.at(l.n, b); cl != nil {
				return cl.own
			}
		}
		return 0
	}
	for c := 0; c < len(cells); {
		o := own(c)
		end := c + 1
		for end < len(cells) && own(end) == o {
			end++
		}
		if o != 0 {
			num := strconv.Itoa(o)
			// a number right after another would read as one ("81"): the later one starts a
			// column on ("1═2"), or, in a hold too short for that, is left out
			var free []int
			for x := c; x < end && len(free) < len(num); x++ {
				digitBefore := x > 0 && cells[x-1].r >= '0' && cells[x-1].r <= '9'
				if !cells[x].mark && (len(free) > 0 || !digitBefore) {
					free = append(free, x)
				}
			}
			if len(free) == len(num) && free[len(free)-1]-free[0] == len(num)-1 {
				for i, x := range free {
					cells[x].r = rune(num[i])
				}
			}
		}
		c = end
	}
}

// cellGlyph is a bucket's glyph and style before marks and owner numbers are drawn over it.
func (t *timeline) cellGlyph(l *lane, c *tcell) (rune, *lipgloss.Style) {
	if l.n <= 0 { // the lock server, or one of its nodes
		switch {
		case t.a.noLock:
			return ' ', nil
		case c.own != 0:
			return '═', &sLockHeld
		}
		return '─', &sLockFree
	}
	if c.st == stWait && c.tries >= 2 {
		return '~', &sCell[stWait]
	}
	if c.st == stIdle {
		return ' ', nil
	}
	return glyph[c.st], &sCell[c.st]
}
