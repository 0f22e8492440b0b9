package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// frameGap is the least time between two frames the lab draws of its own accord: at most 20 a
// second. A key or a resize is drawn at once.
const frameGap = 50 * time.Millisecond

// lab is the lab as its program runs it (New): the model, drawn only after something happened and
// at most once a frameGap on its own, watched (watch.go), and held while nobody presses a key
// (idle.go). Bubble Tea asks for a View after every message, and a live arena sends one for
// each batch of its events and each tick of its clock (60 a second with 5 buyers): most of
// those Views were drawn for nothing. Hazard: like the model, it is used from the program's
// goroutine only.
type lab struct {
	m   *model
	now func() time.Time // the wall clock; tests set their own

	frame     string    // the last frame drawn
	drawn     time.Time // when
	dirty     bool      // a message came since
	urgent    bool      // it was a key or a resize: draw it at once
	redrawing bool      // a redraw is on its way, for what came too soon after the last frame

	watcher
	idler
}

// New makes the lab as a Bubble Tea model for a program the caller runs (Run runs one on the
// terminal, lab serve one per SSH session), and the function that stops everything it started.
// Hazard: call stop once the program has returned: the session's Redis and buyers run until then.
func New(o Options) (model tea.Model, stop func()) {
	l := &lab{m: newModel(o), now: time.Now, dirty: true}
	l.watcher = watcher{tell: o.Watch, broke: map[string]bool{}, best: map[string]int{}}
	return l, l.shutdown
}

// shutdown stops the session and ends any wait of the lab's (a redraw, a digit).
func (l *lab) shutdown() {
	select {
	case <-l.m.quit:
	default:
		close(l.m.quit)
	}
	l.m.shutdown()
}

// redrawMsg draws what came too soon after the last frame.
type redrawMsg struct{}

func (l *lab) Init() tea.Cmd {
	l.lastKey = l.now()
	return l.m.Init()
}

// Update hands msg to the model (unless it only brings the lab back from being held), tells the
// watcher what changed, and asks for a redraw when msg came too soon after the last frame to
// be drawn now.
func (l *lab) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg.(type) {
	case redrawMsg:
		l.redrawing = false
		return l, nil
	case tea.KeyMsg, tea.WindowSizeMsg:
		l.urgent = true
	}
	cmd, taken := l.idle(l.m, msg, l.now())
	if !taken {
		_, c := l.m.Update(msg)
		cmd = tea.Batch(cmd, c)
	}
	l.dirty = true
	l.watch(l.m, l.away)
	if wait := frameGap - l.now().Sub(l.drawn); !l.urgent && !l.redrawing && wait > 0 {
		l.redrawing = true
		quit := l.m.quit
		cmd = tea.Batch(cmd, func() tea.Msg {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
				return redrawMsg{}
			case <-quit:
				return nil
			}
		})
	}
	return l, cmd
}

// View is the last frame, drawn again when something happened since and it is time.
func (l *lab) View() string {
	if now := l.now(); l.dirty && (l.urgent || now.Sub(l.drawn) >= frameGap) {
		l.frame, l.drawn = l.m.View(), now
		l.dirty, l.urgent = false, false
	}
	return l.frame
}
