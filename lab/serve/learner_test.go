package serve

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/ssh"
	"github.com/charmbracelet/x/ansi"
	gossh "golang.org/x/crypto/ssh"
)

// longStop bounds every wait of these tests: reached only when what they wait for never comes.
const longStop = 90 * time.Second

// testKey is a host key made for one test.
func testKey(t testing.TB) []byte {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(blk)
}

// startRoom serves a room on a loopback port until the test ends, then shuts it down.
func startRoom(t testing.TB, c Config) (*Server, string) {
	t.Helper()
	c.HostKey = testKey(t)
	if c.Lab.Slow == 0 {
		c.Lab.Slow = 1 // the tests' pace: a TTL of 200 ms
	}
	srv, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), longStop)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; !errors.Is(err, ssh.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

// dialRoom connects to the room as user (with password, if not "").
func dialRoom(t testing.TB, addr, user, password string) (*gossh.Client, error) {
	cfg := &gossh.ClientConfig{User: user, HostKeyCallback: gossh.InsecureIgnoreHostKey(), Timeout: longStop}
	if password != "" {
		cfg.Auth = []gossh.AuthMethod{gossh.Password(password)}
	}
	return gossh.Dial("tcp", addr, cfg)
}

// learner is one learner's terminal on the room: an SSH session with a PTY, its output kept.
type learner struct {
	t      testing.TB
	client *gossh.Client
	sess   *gossh.Session
	in     io.WriteCloser
	mu     sync.Mutex
	out    bytes.Buffer
	more   chan struct{} // capacity 1: output came
	ended  chan error    // the session's exit
}

// join opens a learner's terminal of type term, w×h, on the room at addr.
func join(t testing.TB, addr, user, term string, w, h int) *learner {
	t.Helper()
	c, err := dialRoom(t, addr, user, "")
	if err != nil {
		t.Fatal(err)
	}
	l := &learner{t: t, client: c, more: make(chan struct{}, 1), ended: make(chan error, 1)}
	t.Cleanup(func() { l.client.Close() })
	if l.sess, err = c.NewSession(); err != nil {
		t.Fatal(err)
	}
	if err := l.sess.RequestPty(term, h, w, gossh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	if l.in, err = l.sess.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	l.sess.Stdout, l.sess.Stderr = l, l
	if err := l.sess.Shell(); err != nil {
		t.Fatal(err)
	}
	go func() { l.ended <- l.sess.Wait() }()
	return l
}

func (l *learner) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.out.Write(p)
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

// raw is everything the learner's terminal received.
func (l *learner) raw() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

// screen is what the learner has been shown, escape codes left out: the lab rewrites a line
// whole, so a line's words are found in it as they were drawn.
func (l *learner) screen() string { return ansi.Strip(l.raw()) }

// press types keys.
func (l *learner) press(keys string) {
	l.t.Helper()
	if _, err := io.WriteString(l.in, keys); err != nil {
		l.t.Fatalf("typing %q: %v", keys, err)
	}
}

// see waits until the learner has been shown want, after the first from bytes of their output
// (what they see next, not what they saw before).
func (l *learner) see(want string, from int) {
	l.t.Helper()
	deadline := time.After(longStop)
	for {
		if strings.Contains(ansi.Strip(l.raw()[from:]), want) {
			return
		}
		select {
		case <-l.more:
		case <-deadline:
			l.t.Fatalf("never shown %q; the screen's last 2000 bytes:\n%s", want, tail(l.screen(), 2000))
		}
	}
}

// mark is where the learner's output is now: see(want, mark) waits for what comes after it.
func (l *learner) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.Len()
}

// end waits for the session to end and returns its exit error (nil for status 0).
func (l *learner) end() error {
	l.t.Helper()
	select {
	case err := <-l.ended:
		return err
	case <-time.After(longStop):
		l.t.Fatalf("the session never ended; its screen's last 2000 bytes:\n%s", tail(l.screen(), 2000))
	}
	return nil
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// waitRoom waits until the room's table has a line with every one of words.
func waitRoom(t testing.TB, r *Room, words ...string) {
	t.Helper()
	deadline := time.Now().Add(longStop)
	for {
		f, _ := r.Snapshot()
		for _, line := range Table(f, time.Now(), 300, true, nil) {
			if containsAll(line, words) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the room never showed a line with %q:\n%s", words, strings.Join(Table(f, time.Now(), 300, true, nil), "\n"))
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitLog waits until the trainer's log has a line with want.
func waitLog(t testing.TB, r *Room, want string) {
	t.Helper()
	deadline := time.Now().Add(longStop)
	for {
		_, log := r.Snapshot()
		for _, line := range log {
			if strings.Contains(line, want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q:\n%s", want, strings.Join(log, "\n"))
		}
		select {
		case <-r.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func containsAll(s string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}
