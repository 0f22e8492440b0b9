package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// Each pane has its own key map; the footer shows the keys that matter on the current screen and
// ? shows them all. A key map is a help.KeyMap: ShortHelp is its footer, FullHelp its part of ?.

func bind(keys []string, k, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
}

// globalKeys work on every screen but help: moving between steps, breaking, help, quitting.
type globalKeys struct {
	Prev, Next, Jump, Break, Help, Quit key.Binding
	Steps                               key.Binding // the footer's shorthand for Prev and Next
	JumpShort                           key.Binding // the footer's shorter word for Jump
}

// ShortHelp and FullHelp make globalKeys a help.KeyMap.
func (k globalKeys) ShortHelp() []key.Binding { return []key.Binding{k.Help, k.Quit} }

func (k globalKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Prev, k.Next, k.Jump}, {k.Break, k.Help, k.Quit}}
}

func newGlobalKeys(all []*steps.Step) globalKeys {
	digits := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	short := bind(digits, fmt.Sprintf("1-%d", course.Last(all)), "go to step")
	jump := short
	if course.Last(all) > 9 {
		jump = bind(digits, fmt.Sprintf("1-%d", course.Last(all)), "go to step: type its number")
	}
	return globalKeys{JumpShort: short,
		Prev:  bind([]string{"left", "h"}, "←", "previous step"),
		Next:  bind([]string{"right", "l"}, "→", "next step"),
		Jump:  jump,
		Break: bind([]string{"b"}, "b", "break it"),
		Help:  bind([]string{"?"}, "?", "help"),
		Quit:  bind([]string{"q", "ctrl+c"}, "q", "quit"),
		Steps: key.NewBinding(key.WithKeys("left", "right"), key.WithHelp("←/→", "step")),
	}
}

// pickerKeys move through the list and open a step.
type pickerKeys struct {
	g                          globalKeys
	Up, Down, PageUp, PageDown key.Binding
	First, Last, Open, Code    key.Binding
}

func newPickerKeys(g globalKeys) pickerKeys {
	return pickerKeys{g: g,
		Up:       bind([]string{"up", "k"}, "↑", "previous step"),
		Down:     bind([]string{"down", "j"}, "↓", "next step"),
		PageUp:   bind([]string{"pgup"}, "pgup", "a page of steps up"),
		PageDown: bind([]string{"pgdown"}, "pgdn", "a page of steps down"),
		First:    bind([]string{"home"}, "home", "the first step"),
		Last:     bind([]string{"end"}, "end", "the last step"),
		Open:     bind([]string{"enter", " "}, "enter", "open the arena"),
		Code:     bind([]string{"tab", "c"}, "tab/c", "code"),
	}
}

func (k pickerKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.g.Steps, k.g.JumpShort, k.Open, k.g.Break, k.Code, k.g.Help, k.g.Quit}
}

func (k pickerKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown}, {k.First, k.Last, k.Open, k.Code}}
}

// arenaKeys inject faults into the live buyers and steer the session.
type arenaKeys struct {
	g                        globalKeys
	faults                   []faultKey // one per scenario with a key, in matrix order
	Hold, Reset, More, Fewer key.Binding
	Slower, Faster           key.Binding
	Back1, On1, First, Last  key.Binding // rewind (rewind.go)
	Buyers, Speed, Rewind    key.Binding // footer shorthands
	Code, Back, Drive        key.Binding
}

// faultKey is a scenario's key: it plays the scenario's move on the live holder.
type faultKey struct {
	sc *scenario.Scenario
	b  key.Binding
}

func newArenaKeys(g globalKeys) arenaKeys {
	k := arenaKeys{g: g,
		Hold:   bind([]string{" "}, "space", "hold orders"),
		Reset:  bind([]string{"r"}, "r", "reset"),
		More:   bind([]string{"+", "="}, "+", "more buyers"),
		Fewer:  bind([]string{"-", "_"}, "-", "fewer buyers"),
		Slower: bind([]string{"["}, "[", "slower"),
		Faster: bind([]string{"]"}, "]", "faster"),
		Back1:  bind([]string{","}, ",", "rewind: back"),
		On1:    bind([]string{"."}, ".", "rewind: on"),
		First:  bind([]string{"home"}, "home", "rewind: first"),
		Last:   bind([]string{"end"}, "end", "rewind: last"),
		Rewind: key.NewBinding(key.WithKeys(",", "."), key.WithHelp(",/.", "rewind")),
		Buyers: key.NewBinding(key.WithKeys("+", "-"), key.WithHelp("+/-", "buyers")),
		Speed:  key.NewBinding(key.WithKeys("[", "]"), key.WithHelp("[/]", "speed")),
		Code:   bind([]string{"tab", "c"}, "tab/c", "code"),
		Back:   bind([]string{"esc"}, "esc", "back"),
		Drive:  bind([]string{"m"}, "m", "drive"),
	}
	for _, sc := range scenario.Keyed() {
		k.faults = append(k.faults, faultKey{sc: sc, b: bind([]string{sc.Key}, sc.Key, sc.Label)})
	}
	return k
}

// faultKey is the key of scenario name.
func (k arenaKeys) faultKey(name steps.Scenario) key.Binding {
	for _, f := range k.faults {
		if f.sc.Name == name {
			return f.b
		}
	}
	return key.Binding{}
}

func (k arenaKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.g.Break, k.Drive, k.Hold, k.Reset, k.Buyers, k.Speed, k.g.Steps, k.Code, k.g.Help, k.g.Quit}
}

// faultRow is the footer's first line in a live arena: one key per fault.
func (k arenaKeys) faultRow() []key.Binding {
	out := make([]key.Binding, len(k.faults))
	for i, f := range k.faults {
		out[i] = f.b
	}
	return out
}

func (k arenaKeys) FullHelp() [][]key.Binding {
	f := k.faultRow()
	return [][]key.Binding{f[:5], f[5:], {k.Hold, k.Reset, k.More, k.Fewer, k.Slower, k.Faster},
		{k.Back1, k.On1, k.First, k.Last, k.Code, k.Back, k.Drive}}
}

// codeKeys scroll the code pane and switch between diff and source.
// scrollKeys move a viewport: the code pane's and the help screen's.
type scrollKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
}

func newScrollKeys() scrollKeys {
	return scrollKeys{
		Up:       bind([]string{"up", "k"}, "↑", "up"),
		Down:     bind([]string{"down", "j"}, "↓", "down"),
		PageUp:   bind([]string{"pgup"}, "pgup", "page up"),
		PageDown: bind([]string{"pgdown", " "}, "pgdn", "page down"),
		Top:      bind([]string{"home", "g"}, "home", "top"),
		Bottom:   bind([]string{"end", "G"}, "end", "bottom"),
	}
}

// scroll moves vp as k asks, if k is one of the scroll keys.
func (s scrollKeys) scroll(vp *viewport.Model, k tea.KeyMsg) {
	switch {
	case key.Matches(k, s.Up):
		vp.ScrollUp(1)
	case key.Matches(k, s.Down):
		vp.ScrollDown(1)
	case key.Matches(k, s.PageUp):
		vp.PageUp()
	case key.Matches(k, s.PageDown):
		vp.PageDown()
	case key.Matches(k, s.Top):
		vp.GotoTop()
	case key.Matches(k, s.Bottom):
		vp.GotoBottom()
	}
}

type codeKeys struct {
	g globalKeys
	scrollKeys
	Scroll            key.Binding // the footer's shorthand for the six scroll keys
	Diff, Arena, Back key.Binding
}

func newCodeKeys(g globalKeys) codeKeys {
	return codeKeys{g: g, scrollKeys: newScrollKeys(),
		Scroll: bind([]string{"up", "down", "pgup", "pgdown", "home", "end", "j", "k"}, "↑↓ pgup pgdn", "scroll"),
		Diff:   bind([]string{"d"}, "d", "diff ↔ source"),
		Arena:  bind([]string{"tab", "c"}, "tab/c", "arena"),
		Back:   bind([]string{"esc"}, "esc", "back"),
	}
}

func (k codeKeys) ShortHelp() []key.Binding {
	return []key.Binding{k.Scroll, k.Diff, k.g.Steps, k.Arena, k.g.Break, k.Back, k.g.Help, k.g.Quit}
}

func (k codeKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown}, {k.Top, k.Bottom}, {k.Diff, k.Arena, k.Back}}
}

// helpKeys scroll the help screen and close it.
type helpKeys struct {
	g globalKeys
	scrollKeys
	Close key.Binding
}

func newHelpKeys(g globalKeys) helpKeys {
	return helpKeys{g: g, scrollKeys: newScrollKeys(),
		Close: bind([]string{"?", "esc"}, "? / esc", "close help"),
	}
}

func (k helpKeys) ShortHelp() []key.Binding { return []key.Binding{k.Close, k.g.Quit} }

func (k helpKeys) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown}, {k.Top, k.Bottom, k.Close}}
}
