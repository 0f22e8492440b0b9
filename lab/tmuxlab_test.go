package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The real binary in a real terminal: a tmux session the tests type into and read back.

// tmuxLab runs the real lab binary in a detached tmux session on a private server, the way a
// person runs it in a terminal.
type tmuxLab struct {
	t      *testing.T
	socket string
	name   string
}

var (
	tmuxSeq   atomic.Int64 // tests of this process that started a tmux server
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// buildLab builds the lab binary once for all tests (TestMain removes it).
func buildLab(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "lockstep-lab-"); buildErr != nil {
			return
		}
		buildOut, buildErr = exec.Command("go", "build", "-o", filepath.Join(buildDir, "lab"), ".").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "lab")
}

func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed, and CI must run the tmux test (apt-get install tmux)")
		}
		t.Skip("tmux is not installed: the test that drives the real binary in a terminal is skipped")
	}
}

func startTmux(t *testing.T, bin string, w, h string, args ...string) *tmuxLab {
	t.Helper()
	l := &tmuxLab{t: t, socket: fmt.Sprintf("lockstep-test-%d-%d", os.Getpid(), tmuxSeq.Add(1)), name: "lab"}
	// After the lab exits, the pane shows its exit status and stays, like a shell would.
	cmd := strings.Join(append([]string{bin}, args...), " ") + "; echo LAB-EXITED=$?; sleep 60"
	l.tmux("new-session", "-d", "-s", l.name, "-x", w, "-y", h, "sh", "-c", cmd)
	t.Cleanup(func() { exec.Command("tmux", "-L", l.socket, "kill-server").Run() })
	return l
}

func (l *tmuxLab) tmux(args ...string) string {
	l.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", l.socket}, args...)...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (l *tmuxLab) screen() string { return l.tmux("capture-pane", "-p", "-t", l.name) }

func (l *tmuxLab) send(keys ...string) {
	l.tmux(append([]string{"send-keys", "-t", l.name}, keys...)...)
}

// waitFor polls the pane until it shows every want, and returns it.
func (l *tmuxLab) waitFor(d time.Duration, want ...string) string {
	l.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := l.screen()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("after %s the pane does not show %q:\n%s", d, want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled polls the pane until two captures 150 ms apart agree (a finished run's screen stands
// still; a capture can catch the terminal halfway through painting a frame), and returns it.
func (l *tmuxLab) settled(d time.Duration) string {
	l.t.Helper()
	deadline := time.Now().Add(d)
	last := l.screen()
	for {
		time.Sleep(150 * time.Millisecond)
		s := l.screen()
		if s == last {
			return s
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("after %s the pane still changes:\n%s", d, s)
		}
		last = s
	}
}

// waitForRe polls the pane until re matches it, and returns it.
func (l *tmuxLab) waitForRe(d time.Duration, re *regexp.Regexp) string {
	l.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := l.screen()
		if re.MatchString(s) {
			return s
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("after %s the pane does not match %s:\n%s", d, re, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// envInt is the number environment variable name holds (0 if none).
func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}
