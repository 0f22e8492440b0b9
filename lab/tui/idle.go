package tui

import (
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/lab/course"
)

// idler holds the lab while nobody presses a key (Options.IdlePause): the live buyers place no
// new orders (those under way finish) and the clock's ticks stop, so an idle learner's lab costs
// next to nothing; the next key brings it back. Served to a room (lab serve), thirty labs of
// which a few are watched at a time cost what those few cost.
type idler struct {
	lastKey time.Time
	away    bool // held for want of a key
}

// idle takes msg first: a key counts as the learner being there, and the key that ends a hold
// does nothing else (but quit, which quits); a tick after IdlePause without a key holds the lab,
// and no tick is asked for after it. taken says the model is not to see msg.
func (i *idler) idle(m *model, msg tea.Msg, now time.Time) (cmd tea.Cmd, taken bool) {
	switch msg := msg.(type) {
	case tea.KeyMsg:
		i.lastKey = now
		if i.away {
			i.away = false
			return i.back(m), !key.Matches(msg, m.keys.Quit)
		}
	case tickMsg:
		if m.opt.IdlePause > 0 && !i.away && msg.gen == m.gen && now.Sub(i.lastKey) >= m.opt.IdlePause {
			i.away = true
			i.hold(m)
			return nil, true
		}
	}
	return nil, false
}

// hold holds the live buyers (unless the learner holds them already) and says so.
func (i *idler) hold(m *model) {
	if s := m.sess; s != nil && s.live != nil && !m.paused {
		s.live.SetPaused(true)
	}
	m.msg = fmt.Sprintf("held: no key for %s, so the buyers wait and the clock stops — press any key to go on", course.Span(m.opt.IdlePause.Round(time.Second)))
}

// back lets the live buyers go on (unless the learner held them) and starts the clock again.
func (i *idler) back(m *model) tea.Cmd {
	if s := m.sess; s != nil && s.live != nil && !m.paused {
		s.live.SetPaused(false)
	}
	m.msg = "welcome back: the lab goes on"
	return m.tick()
}
