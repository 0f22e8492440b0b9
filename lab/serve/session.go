package serve

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/ssh"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/tui"
)

// seat is one learner's session: their row of the room, their lab and its program.
type seat struct {
	l    *Learner
	g    *guard
	stop func() // the lab's: its Redis and buyers
	done chan struct{}

	mu   sync.Mutex
	prog *tea.Program
	why  string // why the server ended it, or "" while it runs
}

type seatKey struct{}

// end ends the seat's lab for why ("room closed", "no key for 30m"), unless something ended it
// first: its program is asked to quit.
func (st *seat) end(why string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.why != "" {
		return
	}
	st.why = why
	if st.prog != nil {
		go st.prog.Quit()
	}
}

// ended is why the server ended the seat, or "".
func (st *seat) ended() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.why
}

// admit is the middleware around the lab: a session without a terminal, one past -max and one
// while the room closes each get one line and end; an admitted one gets a seat in the room,
// runs its lab (the Bubble Tea middleware inside), and when that returns its lab is stopped and
// the learner told why, in one line, if the server ended it.
func (s *Server) admit(next ssh.Handler) ssh.Handler {
	return func(sess ssh.Session) {
		if _, _, ok := sess.Pty(); !ok {
			refuse(sess, "lab serve shows the lab on a terminal: ssh -t, or plain ssh without a command")
			return
		}
		name := cleanName(sess.User())
		s.mu.Lock()
		switch {
		case s.closing:
			s.mu.Unlock()
			refuse(sess, "the room is closing: the trainer has stopped lab serve")
			return
		case s.cfg.Max > 0 && len(s.seats) >= s.cfg.Max:
			s.mu.Unlock()
			s.Room.Logf("%s turned away: the room is full (%d)", name, s.cfg.Max)
			refuse(sess, fmt.Sprintf("the room is full: %d learners are in, as many as the trainer allows (-max); try again later", s.cfg.Max))
			return
		}
		st := &seat{l: s.Room.join(name), g: &guard{}, done: make(chan struct{})}
		s.seats[st] = true
		s.running.Add(1)
		s.mu.Unlock()
		defer s.running.Done()
		sess.Context().SetValue(seatKey{}, st)
		go s.watchIdle(st)

		next(sess)

		close(st.done)
		stopLab(st)
		why := st.ended()
		v, trace := st.g.Panic()
		switch {
		case v != nil:
			why = "the lab failed: " + describe(v) + traceNote(st.l.Name, trace)
			fmt.Fprintln(sess, "The lab stopped on a bug (the trainer's screen says which). ssh again to start afresh.")
		case why == "" || why == "left":
			why = "left"
		case why == "room closed":
			fmt.Fprintln(sess, "The trainer has closed the room.")
		default:
			fmt.Fprintf(sess, "The lab closed: %s. ssh again to come back.\n", why)
		}
		s.Room.leave(st.l, why)
		s.mu.Lock()
		delete(s.seats, st)
		s.mu.Unlock()
	}
}

// refuse tells the session why it gets no lab, in one line on its stderr, and ends it with
// status 1.
func refuse(sess ssh.Session, line string) {
	fmt.Fprintln(sess.Stderr(), line)
	sess.Exit(1)
}

// stopLab stops the seat's lab, whatever state a panic left it in.
func stopLab(st *seat) {
	defer func() {
		if r := recover(); r != nil {
			st.g.caught(r)
		}
	}()
	if st.stop != nil {
		st.stop()
	}
}

// program makes the seat's lab and its program (the Bubble Tea middleware runs it): the lab
// tells the room what the learner does, its keys are counted as the learner being there, and
// its frames are drawn in the colours the learner's terminal shows.
func (s *Server) program(sess ssh.Session) *tea.Program {
	st, _ := sess.Context().Value(seatKey{}).(*seat)
	if st == nil {
		return nil
	}
	o := s.cfg.Lab
	o.Watch = func(a tui.Activity) { s.Room.tell(st.l, a) }
	o.IdlePause = s.cfg.Pause
	var lab tea.Model
	lab, st.stop = tui.New(o)
	if s.cfg.wrap != nil {
		lab = s.cfg.wrap(lab)
	}
	st.g.inner = lab
	pty, _, _ := sess.Pty()
	p := tea.NewProgram(st.g, tea.WithInput(&keyReader{r: sess, st: st, room: s.Room}),
		tea.WithOutput(colourWriter(sess, pty.Term, sess.Environ())),
		tea.WithAltScreen(), tea.WithoutSignalHandler())
	st.g.quit = p.Quit
	st.mu.Lock()
	st.prog = p
	if st.why != "" { // ended before its program was made
		go p.Quit()
	}
	st.mu.Unlock()
	return p
}

// keyReader is the learner's keys on their way to the lab: each read counts as the learner being
// there, and the end of their input (their ssh has gone) ends the seat.
type keyReader struct {
	r    io.Reader
	st   *seat
	room *Room
}

func (k *keyReader) Read(p []byte) (int, error) {
	n, err := k.r.Read(p)
	if n > 0 {
		k.room.key(k.st.l)
	}
	if err != nil {
		k.st.end("left")
	}
	return n, err
}

// watchIdle ends the seat once its learner has pressed no key for Config.Idle.
func (s *Server) watchIdle(st *seat) {
	if s.cfg.Idle <= 0 {
		return
	}
	t := time.NewTimer(s.cfg.Idle)
	defer t.Stop()
	for {
		select {
		case <-st.done:
			return
		case <-t.C:
			if since := time.Since(s.Room.lastKey(st.l)); since < s.cfg.Idle {
				t.Reset(s.cfg.Idle - since)
				continue
			}
			st.end("no key for " + course.Span(s.cfg.Idle))
			return
		}
	}
}

// cleanName is the name a learner gave ssh, as the room shows it: printable, at most 24 runes.
func cleanName(s string) string {
	s = unprintable.ReplaceAllString(s, "?")
	if r := []rune(s); len(r) > 24 {
		s = string(r[:24]) + "…"
	}
	if s == "" {
		s = "?"
	}
	return s
}

var unprintable = regexp.MustCompile(`[^\p{L}\p{N}\p{P}\p{S} ]`)

// traceNote writes a panic's trace to a file of its own and names it, so the trainer's screen
// gets one line and the trace is kept for a bug report.
func traceNote(name string, trace []byte) string {
	f, err := os.CreateTemp("", "lockstep-serve-panic-*.txt")
	if err != nil {
		return ""
	}
	fmt.Fprintf(f, "lab serve: %s's lab panicked\n\n%s", name, trace)
	f.Close()
	return " (trace in " + f.Name() + ")"
}
