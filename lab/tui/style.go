package tui

import (
	"strings"
	"sync"

	"github.com/charmbracelet/lipgloss"
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

	sLockHeld = lipgloss.NewStyle().Foreground(lipgloss.Color("39"))
	sLockFree = lipgloss.NewStyle().Foreground(lipgloss.Color("238"))

	// timeline cells, by state
	sCell = [...]lipgloss.Style{
		stIdle:    lipgloss.NewStyle(),
		stWait:    lipgloss.NewStyle().Foreground(lipgloss.Color("243")),
		stWork:    lipgloss.NewStyle().Foreground(lipgloss.Color("42")),
		stHold:    lipgloss.NewStyle().Foreground(lipgloss.Color("39")),
		stInside:  lipgloss.NewStyle().Foreground(lipgloss.Color("42")),
		stCut:     lipgloss.NewStyle().Foreground(lipgloss.Color("214")),
		stCutIn:   lipgloss.NewStyle().Foreground(lipgloss.Color("214")),
		stOverlap: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("196")),
		stFrozen:  lipgloss.NewStyle().Foreground(lipgloss.Color("75")),
		stCrashed: lipgloss.NewStyle().Foreground(lipgloss.Color("160")),
	}
	sMark = [...]lipgloss.Style{
		stIdle:    lipgloss.NewStyle().Bold(true),
		stWait:    lipgloss.NewStyle().Bold(true),
		stWork:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("42")),
		stHold:    lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("39")),
		stInside:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("42")),
		stCut:     lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("214")),
		stCutIn:   lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("0")).Background(lipgloss.Color("214")),
		stOverlap: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("231")).Background(lipgloss.Color("196")),
		stFrozen:  lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("75")),
		stCrashed: lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("160")),
	}
	glyph = [...]rune{stIdle: ' ', stWait: '·', stWork: '░', stHold: '═', stInside: '█', stCut: '┄', stCutIn: '▒', stOverlap: '▓', stFrozen: '‖', stCrashed: '×'}
)

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
