package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// timeline draws the arena's lanes: a ruler, the lock server's lane and one lane per buyer, time
// running left to right up to now. It has no keys of its own yet.
type timeline struct {
	a       *arena
	w, rows int // columns, and buyer lanes at most
}

// SetSize gives the timeline w columns and room for rows buyer lanes.
func (t *timeline) SetSize(w, rows int) { t.w, t.rows = w, rows }

const (
	labelW  = 6
	statusW = 11
)

// View is the ruler, the lock lane and up to rows buyer lanes (with a line saying how many more
// there are, when they do not fit).
func (t *timeline) View() []string {
	a, rows := t.a, t.rows
	cols := min(max(t.w-labelW-statusW, 10), ringN)
	nowB := a.bucket(a.now)
	first := max(0, nowB-int64(cols)+1)
	out := []string{t.ruler(first, cols)}
	// The lock lane's status says what the LOCK line says: the latest reading, while there is one.
	owner, held := a.owner, a.owner != 0
	if a.read && !a.done {
		owner, held = a.lk.st.Owner, a.lk.st.Held
	}
	lockStatus := "free"
	switch {
	case a.noLock:
		lockStatus = "no lock"
	case held && owner != 0:
		lockStatus = fmt.Sprintf("buyer %d", owner)
	case held:
		lockStatus = "held"
	}
	out = append(out, t.laneLine(a.lock, "lock", first, nowB, cols, lockStatus))
	lanes := a.lanes
	show := rows
	if len(lanes) > rows && rows > 0 {
		show = rows - 1
		// Too many lanes: leave out those with nothing on screen (retired buyers), in order.
		var busy []*lane
		for _, l := range lanes {
			if t.active(l, first, nowB) {
				busy = append(busy, l)
			}
		}
		lanes = busy
	}
	for i := 0; i < show && i < len(lanes); i++ {
		l := lanes[i]
		out = append(out, t.laneLine(l, fmt.Sprintf("b%d", l.n), first, nowB, cols, t.laneStatus(l, nowB)))
	}
	if n := len(a.lanes) - min(show, len(lanes)); n > 0 {
		out = append(out, sDim.Render(fmt.Sprintf("      … %d more buyers not shown (a taller terminal shows them)", n)))
	}
	return out
}

// active tells whether lane l has anything but idle cells between buckets from and to.
func (t *timeline) active(l *lane, from, to int64) bool {
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

func (t *timeline) laneStatus(l *lane, nowB int64) string {
	st := l.state()
	switch {
	case st == stOverlap:
		return sBad.Render("▓ OVERLAP")
	case st == stWait:
		if c := l.at(nowB); (c != nil && c.spins >= 2) || spinning(l, nowB) {
			return sCell[stWait].Render("~ spinning")
		}
	case st == stIdle && t.a.roster.retired[l.n]:
		return sDim.Render("  retired")
	}
	return sCell[st].Render(string(glyph[st]) + " " + [...]string{"idle", "waiting", "holds", "inside", "OVERLAP", "frozen", "crashed"}[st])
}

func spinning(l *lane, nowB int64) bool {
	if c := l.at(nowB - 1); c != nil && c.spins >= 2 {
		return true
	}
	return false
}

func (t *timeline) ruler(first int64, cols int) string {
	a := t.a
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
func (t *timeline) laneLine(l *lane, label string, first, nowB int64, cols int, status string) string {
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
				r, style = t.cellGlyph(l, cl)
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

func (t *timeline) cellGlyph(l *lane, c *tcell) (rune, *lipgloss.Style) {
	if l.n == 0 { // the lock server
		switch {
		case t.a.noLock:
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
