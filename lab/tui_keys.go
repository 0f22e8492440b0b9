package main

import (
	"github.com/charmbracelet/bubbles/key"
	"github.com/lockstep-lab/lockstep/internal/sim"
)

// keyMap is every key of the lab; the footer shows the ones that matter on the current screen and
// ? shows them all.
type keyMap struct {
	Prev, Next, Jump, Open, Back key.Binding
	Break, Faults                key.Binding
	Crash, Error, Slow, Pause    key.Binding
	UnlockRace, Failover, Nested key.Binding
	Hold, Reset, More, Fewer     key.Binding
	Slower, Faster               key.Binding
	Buyers, Speed, Steps         key.Binding // footer shorthands
	Code, Diff, Scroll           key.Binding
	Help, Quit                   key.Binding
}

func newKeyMap() keyMap {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return keyMap{
		Prev:       b([]string{"left", "h"}, "←", "previous step"),
		Next:       b([]string{"right", "l"}, "→", "next step"),
		Jump:       b([]string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "1-9", "go to step"),
		Open:       b([]string{"enter"}, "enter", "open the arena"),
		Back:       b([]string{"esc"}, "esc", "back"),
		Break:      b([]string{"b"}, "b", "break it"),
		Faults:     key.NewBinding(key.WithKeys(), key.WithHelp("x e s p u f n", "faults")),
		Crash:      b([]string{"x"}, "x", "crash"),
		Error:      b([]string{"e"}, "e", "error"),
		Slow:       b([]string{"s"}, "s", "slow"),
		Pause:      b([]string{"p"}, "p", "pause"),
		UnlockRace: b([]string{"u"}, "u", "unlock-race"),
		Failover:   b([]string{"f"}, "f", "failover"),
		Nested:     b([]string{"n"}, "n", "nested"),
		Hold:       b([]string{" "}, "space", "hold orders"),
		Reset:      b([]string{"r"}, "r", "reset"),
		More:       b([]string{"+", "="}, "+", "more buyers"),
		Fewer:      b([]string{"-", "_"}, "-", "fewer buyers"),
		Slower:     b([]string{"["}, "[", "slower"),
		Faster:     b([]string{"]"}, "]", "faster"),
		Code:       b([]string{"tab", "c"}, "tab/c", "code"),
		Diff:       b([]string{"d"}, "d", "diff ↔ source"),
		Scroll:     b([]string{"up", "down", "pgup", "pgdown", "home", "end", "j", "k"}, "↑↓ pgup pgdn", "scroll"),
		Buyers:     key.NewBinding(key.WithKeys("+", "-"), key.WithHelp("+/-", "buyers")),
		Speed:      key.NewBinding(key.WithKeys("[", "]"), key.WithHelp("[/]", "speed")),
		Steps:      key.NewBinding(key.WithKeys("left", "right"), key.WithHelp("←/→", "step")),
		Help:       b([]string{"?"}, "?", "help"),
		Quit:       b([]string{"q", "ctrl+c"}, "q", "quit"),
	}
}

// faultKeys pairs each fault with its key, in sim.Faults order.
func (k keyMap) faultKeys() map[sim.Fault]key.Binding {
	return map[sim.Fault]key.Binding{
		sim.FaultCrash: k.Crash, sim.FaultError: k.Error, sim.FaultSlow: k.Slow, sim.FaultPause: k.Pause,
		sim.FaultUnlockRace: k.UnlockRace, sim.FaultFailover: k.Failover, sim.FaultReentrant: k.Nested,
	}
}

// ShortHelp and FullHelp make keyMap a help.KeyMap.
func (k keyMap) ShortHelp() []key.Binding { return []key.Binding{k.Help, k.Quit} }

func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Prev, k.Next, k.Jump, k.Open, k.Back, k.Code, k.Diff, k.Scroll},
		{k.Crash, k.Error, k.Slow, k.Pause, k.UnlockRace, k.Failover, k.Nested, k.Break},
		{k.Hold, k.Reset, k.More, k.Fewer, k.Slower, k.Faster, k.Help, k.Quit},
	}
}
