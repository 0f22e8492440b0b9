package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/lab/picture"
)

// timeline draws the arena's lanes: a ruler, the lock server's lane and one lane per buyer, time
// running left to right up to now; in rewind (rewind.go), a marker column at the cursor.
type timeline struct {
	a       *board
	w, rows int   // columns, and lines for buyer lanes at most
	keep    []int // buyers to show first when not all fit: those a sentence on screen names
	buf     []column
	cur     int      // the rewind cursor's column, -1 if none is drawn
	bs      *buckets // the lanes' buckets this View draws
}

// SetSize gives the timeline w columns and rows lines for buyer lanes.
func (t *timeline) SetSize(w, rows int) { t.w, t.rows = w, rows }

const (
	labelW  = 6
	statusW = 11
)

// View is the ruler, the lock lane and the buyer lanes that fit in rows lines. When not all fit,
// the last line says how many are left out, and the lanes shown are the ones that matter: the
// buyers in keep, the lock's owner, the buyers doing something, in that order.
func (t *timeline) View() []string {
	a := t.a
	cols := min(max(t.w-labelW-statusW, 10), ringN)
	a.zoom(cols)
	nowB, cur := a.window(cols) // in rewind, the view around the cursor
	t.bs = a.draw(max(0, nowB-int64(cols)-8), nowB)
	lanes, hidden := t.pick(nowB - int64(cols) + 1)
	// Marks made at the last instant spill past now: leave them the columns they need.
	tail := t.spillPast(a.lock, nowB)
	for _, l := range a.nodeLanes {
		tail = max(tail, t.spillPast(l, nowB))
	}
	for _, l := range lanes {
		tail = max(tail, t.spillPast(l, nowB))
	}
	first := max(0, nowB+int64(tail)-int64(cols)+1)
	t.cur = -1
	if cur >= first && cur < first+int64(cols) {
		t.cur = int(cur - first)
	}
	out := []string{t.ruler(first, cols)}
	// The lock lane's status says what the LOCK line says: the latest reading, while there is one.
	owner, held := a.owner, a.owner != 0
	switch {
	case a.rw != nil: // the lock at the cursor
		owner = a.hist.at(a.rw.at).owner
		held = owner != 0
	case a.read && !a.done && !a.multi():
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
	for i, l := range a.nodeLanes { // a quorum's nodes: who holds the lock on each
		st := "free"
		if o := a.pic.Holder(i); o != 0 {
			st = fmt.Sprintf("buyer %d", o)
		}
		out = append(out, t.laneLine(l, fmt.Sprintf(" @%d", i+1), first, nowB, cols, sDim.Render(st)))
	}
	for _, l := range lanes {
		out = append(out, t.laneLine(l, fmt.Sprintf("b%d", l.n), first, nowB, cols, t.laneStatus(l, nowB)))
	}
	if len(hidden) > 0 {
		names := make([]string, len(hidden))
		for i, l := range hidden {
			names[i] = fmt.Sprintf("b%d", l.n)
		}
		what := "1 more buyer"
		if len(hidden) > 1 {
			what = fmt.Sprintf("%d more buyers", len(hidden))
		}
		out = append(out, sDim.Render(fmt.Sprintf("      … %s not shown (a taller terminal shows them): %s", what, strings.Join(names, " "))))
	}
	return out
}

// pick chooses the buyer lanes to draw, in number order, and those left out.
func (t *timeline) pick(from int64) (shown, hidden []*lane) {
	a := t.a
	if len(a.lanes) <= t.rows {
		return a.lanes, nil
	}
	if t.rows <= 0 {
		return nil, nil
	}
	nowB := a.bucket(a.now)
	score := func(l *lane) int {
		switch {
		case slices.Contains(t.keep, l.n):
			return 4
		case l.n == a.owner || (a.read && l.n == a.lk.st.Owner):
			return 3
		case a.state(l.n) != stIdle:
			return 2
		case t.active(l, from, nowB):
			return 1
		}
		return 0
	}
	order := slices.Clone(a.lanes)
	slices.SortStableFunc(order, func(x, y *lane) int { return score(y) - score(x) })
	shown, hidden = order[:t.rows-1], order[t.rows-1:]
	byN := func(x, y *lane) int { return x.n - y.n }
	slices.SortFunc(shown, byN)
	slices.SortFunc(hidden, byN)
	return shown, hidden
}

// spillPast is how many marks of lane l's last buckets still wait for a column after now.
func (t *timeline) spillPast(l *lane, nowB int64) int {
	ns := 0
	for b := max(0, nowB-8); b <= nowB; b++ {
		n := 0
		if c := t.bs.at(l.n, b); c != nil {
			for _, mk := range c.marks {
				if mk != picture.None {
					n++
				}
			}
		}
		ns = max(0, ns+n-1)
	}
	return ns
}

// active tells whether lane l has anything but idle cells between buckets from and to.
func (t *timeline) active(l *lane, from, to int64) bool {
	if t.a.state(l.n) != stIdle {
		return true
	}
	for b := max(from, 0); b <= to; b++ {
		if c := t.bs.at(l.n, b); c != nil && (c.st != stIdle || c.marks[0] != picture.None) {
			return true
		}
	}
	return false
}

// state is buyer n's lane's state now.
func (a *board) state(n int) picture.State {
	st, _, _, _ := a.pic.Buyer(n)
	return st
}

// laneStatus is what a buyer does now, in words, after its lane.
func (t *timeline) laneStatus(l *lane, nowB int64) string {
	st, _, waiting, inside := t.a.pic.Buyer(l.n)
	if c := t.bs.at(l.n, nowB); c != nil && c.st == stOverlap && inside > 0 {
		st = stOverlap // the referee has just found this order inside together with another
	}
	switch {
	case inside > 1 && st == stOverlap:
		return sBad.Render("▓ 2 inside") // two orders of one buyer (a second request), judged
	case inside > 1:
		return sCell[st].Render(string(glyph[st]) + " 2 inside") // two orders of one buyer (a second request)
	case st == stOverlap:
		return sBad.Render("▓ OVERLAP")
	case inside > 0 && waiting > 0:
		return sCell[st].Render(string(glyph[st]) + " +1 waits") // its second order waits its turn
	case st == stWait:
		if t.spinning(l, nowB) || t.spinning(l, nowB-1) {
			return sCell[stWait].Render("~ spinning")
		}
	case st == stIdle && t.a.roster.retired[l.n]:
		return sDim.Render("  retired")
	}
	return sCell[st].Render(string(glyph[st]) + " " + [...]string{"idle", "waiting", "works", "holds", "inside", "cut off", "in, cut off", "OVERLAP", "frozen", "crashed"}[st])
}

// spinning tells whether lane l tried for the lock twice or more in bucket b.
func (t *timeline) spinning(l *lane, b int64) bool {
	c := t.bs.at(l.n, b)
	return c != nil && c.tries >= 2
}

// ruler marks every TTL of the time shown, or, when fewer than two TTLs are shown (a zoomed
// run), a rounder step that gives a few marks.
func (t *timeline) ruler(first int64, cols int) string {
	a := t.a
	step := a.timing.TTL
	if int64(cols)*int64(a.res) < 2*int64(step) {
		for _, s := range []time.Duration{10, 20, 50, 100, 200, 500, 1000, 2000, 5000} {
			if step = s * time.Millisecond; int64(step/a.res) >= 12 {
				break
			}
		}
	}
	buf := []rune(strings.Repeat(" ", cols))
	free := 0                                                        // the first column a label may take
	for k := (time.Duration(first)*a.res + step - 1) / step; ; k++ { // k: the k-th mark of the step
		at := time.Duration(k) * step
		c := int(a.bucket(at) - first)
		if c >= cols {
			break
		}
		if c < free {
			continue
		}
		buf[c] = '┊'
		lbl := []rune(fmtTick(at, step))
		if c+len(lbl) >= cols {
			continue
		}
		copy(buf[c+1:], lbl)
		free = c + 1 + len(lbl) + 1
	}
	if t.cur >= 0 && t.cur < cols {
		buf[t.cur] = '▼'
	}
	return sDim.Render(fmt.Sprintf("%-*s%s", labelW, "time", string(buf)))
}

// fmtTick is a ruler's label: in milliseconds when its marks are less than 100 ms apart.
func fmtTick(d, step time.Duration) string {
	if step < 100*time.Millisecond {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	if step < time.Second {
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", d.Seconds()), "0"), ".") + "s"
	}
	return fmtSec(d)
}

func fmtSec(d time.Duration) string {
	s := fmt.Sprintf("%.1f", d.Seconds())
	s = strings.TrimSuffix(s, ".0")
	return s + "s"
}
