package tui

import (
	"strings"
	"sync"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockstep-lab/lockstep/lab/picture"
)

// The lab's styles. Tests fix the colour profile to ASCII, so the goldens hold text only.
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

	sLockHeld = fg(picture.Held)
	sLockFree = lipgloss.NewStyle().Foreground(lipgloss.Color("238"))

	// timeline cells, by state, in lab/picture's colours (the page's legend uses the same)
	sCell = [...]lipgloss.Style{
		stIdle:    lipgloss.NewStyle(),
		stWait:    fg(picture.Wait),
		stWork:    fg(picture.Work),
		stHold:    fg(picture.Hold),
		stInside:  fg(picture.Inside),
		stCut:     fg(picture.Cut),
		stCutIn:   fg(picture.Cut),
		stOverlap: fg(picture.Overlap).Bold(true),
		stFrozen:  fg(picture.Frozen),
		stCrashed: fg(picture.Dead),
	}
	sMark = [...]lipgloss.Style{
		stIdle:    lipgloss.NewStyle().Bold(true),
		stWait:    lipgloss.NewStyle().Bold(true),
		stWork:    on(picture.Work, "0"),
		stHold:    on(picture.Hold, "0"),
		stInside:  on(picture.Inside, "0"),
		stCut:     on(picture.Cut, "0"),
		stCutIn:   on(picture.Cut, "0"),
		stOverlap: on(picture.Overlap, "231"),
		stFrozen:  fg(picture.Frozen).Bold(true),
		stCrashed: fg(picture.Dead).Bold(true),
	}
	glyph = [...]rune{stIdle: ' ', stWait: '·', stWork: '░', stHold: '═', stInside: '█', stCut: '┄', stCutIn: '▒', stOverlap: '▓', stFrozen: '‖', stCrashed: '×'}
)

// fg is kind k's colour (picture.Colours) as a foreground.
func fg(k picture.Kind) lipgloss.Style {
	return lipgloss.NewStyle().Foreground(lipgloss.Color(picture.Colours[k].Term))
}

// on is a mark drawn in ink on kind k's colour.
func on(k picture.Kind, ink string) lipgloss.Style {
	return lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color(ink)).Background(lipgloss.Color(picture.Colours[k].Term))
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

// paint is st.Render(s) for a short text of one line with no tab, from st's escape codes found
// once (styleCodes): Render measures and pads its text, a fifth of a live arena's frame when the
// footer's keys went through it.
func paint(st *lipgloss.Style, s string) string {
	pre, post := styleCodes(st)
	return pre + s + post
}

var (
	codesMu sync.Mutex
	codes   = map[*lipgloss.Style][2]string{}
)
