package serve

import (
	"fmt"
	"runtime/debug"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
)

// guard runs one learner's lab so that a panic in it ends that lab only: Init, Update and View
// are recovered, and so is every command they return (a batch's one by one), the first panic is
// kept with its trace, and the program is asked to quit. Bubble Tea would recover them too, but
// it prints the trace on the server's own terminal, over the trainer's table. Hazard: a panic in
// a goroutine the lab starts itself (its arena's buyers) is not the program's, and no guard can
// catch it.
type guard struct {
	inner tea.Model
	quit  func() // ends the program from outside its loop (set once the program exists)

	mu    sync.Mutex
	value any    // the first panic, or nil
	trace []byte // and where it happened
}

// panicked is the message a recovered command returns: the lab has died, quit.
type panicked struct{}

// caught keeps the first panic and its trace.
func (g *guard) caught(r any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.value == nil {
		g.value, g.trace = r, debug.Stack()
	}
}

// Panic is the panic that ended the lab, with its trace, or nil.
func (g *guard) Panic() (any, []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.value, g.trace
}

func (g *guard) dead() bool {
	v, _ := g.Panic()
	return v != nil
}

func (g *guard) Init() (cmd tea.Cmd) {
	defer func() {
		if r := recover(); r != nil {
			g.caught(r)
			cmd = tea.Quit
		}
	}()
	return g.wrap(g.inner.Init())
}

func (g *guard) Update(msg tea.Msg) (m tea.Model, cmd tea.Cmd) {
	if _, ok := msg.(panicked); ok || g.dead() {
		return g, tea.Quit
	}
	defer func() {
		if r := recover(); r != nil {
			g.caught(r)
			m, cmd = g, tea.Quit
		}
	}()
	inner, c := g.inner.Update(msg)
	g.inner = inner
	return g, g.wrap(c)
}

func (g *guard) View() (s string) {
	if g.dead() {
		return ""
	}
	defer func() {
		if r := recover(); r != nil {
			g.caught(r)
			s = ""
			if g.quit != nil {
				go g.quit() // View cannot return a command; Quit waits for the loop, which is here
			}
		}
	}()
	return g.inner.View()
}

// wrap recovers c, and the commands of the batch it returns.
func (g *guard) wrap(c tea.Cmd) tea.Cmd {
	if c == nil {
		return nil
	}
	return func() (msg tea.Msg) {
		defer func() {
			if r := recover(); r != nil {
				g.caught(r)
				msg = panicked{}
			}
		}()
		msg = c()
		if b, ok := msg.(tea.BatchMsg); ok {
			for i := range b {
				b[i] = g.wrap(b[i])
			}
		}
		return msg
	}
}

// describe is a panic in one line, for the trainer's log.
func describe(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
