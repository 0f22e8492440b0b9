package serve

import (
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"go.uber.org/goleak"
	gossh "golang.org/x/crypto/ssh"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A learner comes in over SSH with a terminal, sees the step picker, opens step 4, breaks it
// with b, and sees the break; the room has them on step 4 with what they saw.
func TestALearnerBreaksStep04(t *testing.T) {
	srv, addr := startRoom(t, Config{})
	ada := join(t, addr, "ada", "xterm-256color", 160, 44)
	ada.see("No lock: GET stock, SET stock-1", 0) // the picker
	at := ada.mark()
	ada.press("4")
	ada.see("Step 4/17", at)
	at = ada.mark()
	ada.press("\r")
	ada.see("live buyers", at)
	at = ada.mark()
	ada.press("b")
	ada.see("step 4 broke under slow", at)
	// The kinds the learner's INVARIANTS line marks broken (✗) are the room's for ada on 04 (which
	// they are is the wall clock's, under load too: the room must have whichever they are).
	screen := ada.screen()
	inv := screen[strings.LastIndex(screen, "INVARIANTS"):]
	inv = inv[:strings.IndexAny(inv, "\r\n")]
	broke := regexp.MustCompile(`✗ ([a-z-]+)`).FindAllStringSubmatch(inv, -1)
	if len(broke) == 0 {
		t.Fatalf("step 4 broke, and its INVARIANTS line marks nothing broken: %q", inv)
	}
	for _, k := range broke {
		waitRoom(t, srv.Room, "ada", "04_atomic_ttl", "b slow", k[1])
	}
	if !strings.Contains(ada.raw(), "\x1b[38;5;") {
		t.Errorf("a 256-colour terminal was drawn without 256 colours")
	}
	at = ada.mark()
	ada.press("q")
	if err := ada.end(); err != nil {
		t.Errorf("quitting ended the session with %v, want status 0", err)
	}
	waitRoom(t, srv.Room, "ada", "left")
}

// The colours each terminal shows: 16 for TERM=xterm (no 256-colour code reaches it), none for
// TERM=dumb (bold kept).
func TestColoursAsTheTerminalShowsThem(t *testing.T) {
	_, addr := startRoom(t, Config{})
	for _, c := range []struct {
		term      string
		want, not string
	}{{"xterm", "\x1b[91m", "38;5;"}, {"dumb", "\x1b[1m", "\x1b[91m"}} {
		l := join(t, addr, "ada", c.term, 120, 30)
		l.see("No lock: GET stock, SET stock-1", 0)
		if raw := l.raw(); !strings.Contains(raw, c.want) || strings.Contains(raw, c.not) {
			t.Errorf("TERM=%s: want %q and no %q in %q", c.term, c.want, c.not, tail(raw, 300))
		}
		l.press("q")
		l.end()
	}
}

// Nothing but the lab: an exec request, a subsystem (sftp), a port forward either way are
// refused, and a session without a terminal gets one line and status 1.
func TestOnlyTheLab(t *testing.T) {
	srv, addr := startRoom(t, Config{})
	c, err := dialRoom(t, addr, "mallory", "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _ := c.NewSession()
	if out, err := s.CombinedOutput("ls"); err == nil || len(out) > 0 {
		t.Errorf("exec ls: %q, %v; want it refused", out, err)
	}
	s.Close()
	s, _ = c.NewSession()
	if err := s.RequestSubsystem("sftp"); err == nil {
		t.Errorf("the sftp subsystem was granted")
	}
	s.Close()
	if conn, err := c.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Errorf("a local port forward (direct-tcpip) was opened")
	} else if !strings.Contains(err.Error(), "unknown channel type") {
		t.Errorf("a local port forward: %v, want it refused as an unknown channel type", err)
	}
	if ln, err := c.Listen("tcp", "127.0.0.1:0"); err == nil {
		ln.Close()
		t.Errorf("a remote port forward (tcpip-forward) was granted")
	}
	s, _ = c.NewSession()
	var out strings.Builder
	s.Stdout, s.Stderr = &out, &out
	err = s.Shell() // without a terminal
	if err == nil {
		err = s.Wait()
	}
	var exit *gossh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 1 || out.String() != "lab serve shows the lab on a terminal: ssh -t, or plain ssh without a command\n" {
		t.Errorf("a shell without a terminal: %q, %v; want one line and status 1", out.String(), err)
	}
	if n := srv.Room.Here(); n != 0 {
		t.Errorf("%d learners in the room, want none: nothing was a lab", n)
	}
}

// A password, when set, is asked, and a wrong one lets nobody in.
func TestPassword(t *testing.T) {
	_, addr := startRoom(t, Config{Password: "locks"})
	if c, err := dialRoom(t, addr, "ada", "keys"); err == nil {
		c.Close()
		t.Fatal("a wrong password was let in")
	}
	c, err := dialRoom(t, addr, "ada", "locks")
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	c.Close()
}

// Two learners at once, each their own lab on their own step; the room lists both.
func TestTwoLearnersAtOnce(t *testing.T) {
	srv, addr := startRoom(t, Config{})
	ada := join(t, addr, "ada", "xterm-256color", 140, 40)
	bob := join(t, addr, "bob", "xterm-256color", 100, 30)
	ada.see("No lock: GET stock", 0)
	bob.see("No lock: GET stock", 0)
	ada.press("4\r")
	bob.press("2\r")
	ada.see("Step 4/17", 0)
	bob.see("Step 2/17", 0)
	ada.see("live buyers", 0)
	bob.see("live buyers", 0)
	waitRoom(t, srv.Room, "ada", "04_atomic_ttl")
	waitRoom(t, srv.Room, "bob", "02_setnx")
	if strings.Contains(bob.screen(), "Step 4/17") || strings.Contains(ada.screen(), "Step 2/17") {
		t.Errorf("one learner's lab was drawn on the other's terminal")
	}
	if n := srv.Room.Here(); n != 2 {
		t.Errorf("%d learners here, want 2", n)
	}
}

// Past -max a newcomer gets one line and status 1, at once; the learners in go on.
func TestRoomIsFull(t *testing.T) {
	srv, addr := startRoom(t, Config{Max: 1})
	ada := join(t, addr, "ada", "xterm-256color", 100, 30)
	ada.see("No lock: GET stock", 0)
	bob := join(t, addr, "bob", "xterm-256color", 100, 30)
	var exit *gossh.ExitError
	if err := bob.end(); !errors.As(err, &exit) || exit.ExitStatus() != 1 {
		t.Errorf("bob's session ended with %v, want status 1", err)
	}
	if !strings.Contains(bob.screen(), "the room is full: 1 learners are in") {
		t.Errorf("bob was told %q", bob.screen())
	}
	at := ada.mark()
	ada.press("4")
	ada.see("Step 4/17", at)
	waitLog(t, srv.Room, "bob turned away: the room is full (1)")
}

// A learner who presses no key for -idle is told, and their session ends; the room says why.
func TestIdleSessionEnds(t *testing.T) {
	srv, addr := startRoom(t, Config{Idle: 300 * time.Millisecond})
	ada := join(t, addr, "ada", "xterm-256color", 100, 30)
	if err := ada.end(); err != nil {
		t.Errorf("the idle session ended with %v, want status 0", err)
	}
	if !strings.Contains(ada.screen(), "The lab closed: no key for 300ms") {
		t.Errorf("ada was told %q", tail(ada.screen(), 300))
	}
	waitRoom(t, srv.Room, "ada", "left", "no key for 300ms")
}

// panicky is a lab that panics on !, as a bug in the lab would.
type panicky struct{ tea.Model }

func (p panicky) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if k, ok := msg.(tea.KeyMsg); ok && k.String() == "!" {
		panic("a bug in the lab")
	}
	m, cmd := p.Model.Update(msg)
	return panicky{m}, cmd
}

// A lab that panics ends its own session with one line; the other learner's lab goes on, and
// the trainer's log names the panic and where its trace is.
func TestAPanicEndsOneLab(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // where the trace goes
	srv, addr := startRoom(t, Config{wrap: func(m tea.Model) tea.Model { return panicky{m} }})
	ada := join(t, addr, "ada", "xterm-256color", 100, 30)
	bob := join(t, addr, "bob", "xterm-256color", 100, 30)
	ada.see("No lock: GET stock", 0)
	bob.see("No lock: GET stock", 0)
	ada.press("!")
	if err := ada.end(); err != nil {
		t.Errorf("ada's session ended with %v", err)
	}
	if !strings.Contains(ada.screen(), "The lab stopped on a bug") {
		t.Errorf("ada was told %q", tail(ada.screen(), 300))
	}
	at := bob.mark()
	bob.press("4\r")
	bob.see("live buyers", at)
	waitRoom(t, srv.Room, "ada", "left", "the lab failed")
	_, log := srv.Room.Snapshot()
	i := slices.IndexFunc(log, func(l string) bool { return strings.Contains(l, "a bug in the lab") })
	if i < 0 {
		t.Fatalf("the log does not name the panic: %q", log)
	}
	file := log[i][strings.Index(log[i], "trace in ")+len("trace in ") : len(log[i])-1]
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "panicky.Update") {
		t.Errorf("the trace file %s: %v, %.200q", file, err, b)
	}
}

// Shutdown ends every learner's session with a line, and stops every lab (TestMain's goleak
// holds the labs' goroutines to it).
func TestShutdownEndsEverySession(t *testing.T) {
	srv, addr := startRoom(t, Config{})
	ada := join(t, addr, "ada", "xterm-256color", 100, 30)
	bob := join(t, addr, "bob", "xterm-256color", 100, 30)
	ada.press("4\r")
	bob.press("9\r")
	ada.see("live buyers", 0)
	bob.see("live buyers", 0)
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(t.Context()) }()
	for _, l := range []*learner{ada, bob} {
		if err := l.end(); err != nil {
			t.Errorf("a session ended with %v", err)
		}
		if !strings.Contains(l.screen(), "The trainer has closed the room.") {
			t.Errorf("a learner was told %q", tail(l.screen(), 300))
		}
		l.client.Close()
	}
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	f, _ := srv.Room.Snapshot()
	for _, l := range f.Learners {
		if l.Why != "room closed" {
			t.Errorf("%s left because %q, want room closed", l.Name, l.Why)
		}
	}
}
