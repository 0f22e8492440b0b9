// Package serve is lab serve: the terminal lab for a whole room over SSH, on Charm's own SSH
// stack (wish and its Bubble Tea middleware). Each learner's ssh -p 2222 NAME@HOST gets a lab of
// their own (lab/tui: its own embedded Redis, shop and buyers) drawn for their terminal's size
// and colours, and the room (room.go) tells the trainer's screen (screen.go) who is on which step
// and what they have seen break.
//
// It serves the lab and nothing else: a session is a shell request with a terminal, or it is
// refused — no exec, no subsystem (SFTP), no port forwarding either way; the SSH library's only
// channel is the session. The one host key is kept (hostkey.go).
package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/wish"
	bm "github.com/charmbracelet/wish/bubbletea"
	"github.com/lockstep-lab/lockstep/lab/tui"
	"github.com/muesli/termenv"
	"github.com/redis/go-redis/v9"
	gossh "golang.org/x/crypto/ssh"
)

// Config is a room's settings (lab serve's flags).
type Config struct {
	Password string        // "" lets in anyone who reaches the port
	Max      int           // learners at once; past it a newcomer gets one line
	Idle     time.Duration // a session with no key for this long ends (0: never)
	Pause    time.Duration // a lab with no key for this long holds its buyers (tui.Options.IdlePause; 0: never)
	HostKey  []byte        // the host key, PEM (HostKey reads or makes it)
	Lab      tui.Options   // every learner's lab starts so: backend, speed, buyers, stock
	Room     *Room         // nil: an empty room

	// wrap, in tests, stands between each learner's lab and its program (a lab that panics)
	wrap func(tea.Model) tea.Model
}

// Server is the room's SSH server.
type Server struct {
	cfg  Config
	srv  *ssh.Server
	Room *Room

	mu      sync.Mutex
	seats   map[*seat]bool // the sessions admitted and not yet over
	closing bool
	running sync.WaitGroup // their handlers
}

// New makes the room's server. Hazard: the lab's styles are drawn with lipgloss's one global
// renderer, which New sets to 256 colours for every program in this process; each learner's
// output is brought down to what their terminal shows (colour.go). And go-redis's one logger
// is silenced for the process.
func New(c Config) (*Server, error) {
	if c.Room == nil {
		c.Room = NewRoom(nil)
	}
	s := &Server{cfg: c, Room: c.Room, seats: map[*seat]bool{}}
	opts := []ssh.Option{
		wish.WithHostKeyPEM(c.HostKey),
		wish.WithMiddleware(bm.MiddlewareWithProgramHandler(s.program, termenv.Ascii), s.admit),
		func(srv *ssh.Server) error {
			// A shell and nothing else: exec and subsystems (sftp) are answered no.
			srv.SessionRequestCallback = func(_ ssh.Session, kind string) bool { return kind == "shell" }
			srv.ChannelHandlers = map[string]ssh.ChannelHandler{"session": ssh.DefaultSessionHandler}
			srv.RequestHandlers = nil // no tcpip-forward: -R is refused
			srv.LocalPortForwardingCallback, srv.ReversePortForwardingCallback = nil, nil
			srv.SubsystemHandlers = nil
			return nil
		},
	}
	if c.Password != "" {
		want := []byte(c.Password)
		opts = append(opts, wish.WithPasswordAuth(func(_ ssh.Context, p string) bool {
			return subtle.ConstantTimeCompare([]byte(p), want) == 1
		}))
	}
	if c.Idle > 0 {
		// A connection with no byte either way (its lab held, no key) for a minute past the idle
		// limit, or one that never finishes its handshake, is closed.
		opts = append(opts, wish.WithIdleTimeout(c.Idle+time.Minute))
	}
	srv, err := wish.NewServer(opts...)
	if err != nil {
		return nil, err
	}
	if len(srv.HostSigners) == 0 {
		return nil, errors.New("no host key")
	}
	s.srv = srv
	lipgloss.SetColorProfile(termenv.ANSI256)
	redis.SetLogger(quiet{})
	return s, nil
}

// quiet is go-redis's logger in lab serve: its lines ("connection pool: failed to dial", as a
// lab's Redis stops under its buyers) went to stderr, over the trainer's table.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Fingerprint is the host key's SHA256 fingerprint, as ssh shows it on a first connection.
func (s *Server) Fingerprint() string {
	return gossh.FingerprintSHA256(s.srv.HostSigners[0].PublicKey())
}

// Serve answers the learners who reach l until Shutdown; it returns ssh.ErrServerClosed then.
func (s *Server) Serve(l net.Listener) error { return s.srv.Serve(l) }

// Shutdown ends the room: no newcomer is let in, every learner's lab ends with a line saying
// the trainer closed the room, every lab's Redis and buyers stop, and the server waits (until
// ctx ends) for the learners' connections to close, then closes those left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	var open []*seat
	for st := range s.seats {
		open = append(open, st)
	}
	s.mu.Unlock()
	for _, st := range open {
		st.end("room closed")
	}
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if e := s.srv.Shutdown(ctx); e != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-done // a handler returns once its lab has stopped, which no connection holds up
	return err
}
