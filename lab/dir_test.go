package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// lab -dir: its flags, and the lab built with a learner's lock in a real terminal.

// TestDirFlag: -dir and -nodes are taken out of the terminal lab's flags wherever they stand;
// -nodes alone is refused.
func TestDirFlag(t *testing.T) {
	dir, nodes, rest, ok, err := dirFlag([]string{"-speed", "5", "-dir", "steps/mine", "--nodes=3", "-buyers", "2"})
	if err != nil || !ok || dir != "steps/mine" || nodes != 3 || !slices.Equal(rest, []string{"-speed", "5", "-buyers", "2"}) {
		t.Errorf("got %q %d %q %v %v", dir, nodes, rest, ok, err)
	}
	if _, _, rest, ok, err := dirFlag([]string{"-speed", "5"}); ok || err != nil || len(rest) != 2 {
		t.Errorf("no -dir: got %q %v %v", rest, ok, err)
	}
	for _, args := range [][]string{{"-nodes", "3"}, {"-dir"}, {"-dir", "x", "-nodes", "0"}} {
		if _, _, _, _, err := dirFlag(args); exitCode(err) != 2 {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
	var out, errw bytes.Buffer
	if err := run([]string{"-dir", "../steps/no-such-folder"}, &out, &errw); exitCode(err) != 2 || !strings.Contains(err.Error(), "no such folder") {
		t.Errorf("-dir to no folder: %v", err)
	}
}

func regexpLine(s, re string) bool {
	for _, l := range strings.Split(s, "\n") {
		if m, _ := regexp.MatchString(re, l); m {
			return true
		}
	}
	return false
}

// TestTmuxDir opens the real lab with -dir on a copy of step 13: the learner's lock is the
// picker's last line, its arena runs live buyers through it, b finds a scenario that breaks it
// (a copy of 13 breaks, it is not "unbreakable"), says it breaks as step 13 (its source is 13's,
// as its grade's row is) and names the step that clears it, and q gives the terminal back.
func TestTmuxDir(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	needTmux(t)
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("-short: the tmux test builds and runs the binary")
	}
	bin := buildLab(t)
	dir, err := filepath.Abs(builtCopy(t, "13_pubsub", "README.md", "idea_test.go", "lock_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	slug := "steps/" + filepath.Base(dir)
	l := startTmux(t, bin, "160", "48", "-dir", dir, "-speed", "5")
	// The lab is built with the learner's package first: a link of the whole lab.
	l.waitFor(5*time.Minute, "Step 1/", "The lock in "+slug)
	l.send("End")
	l.waitFor(5*time.Second, "your lock")
	l.send("Enter")
	l.waitFor(20*time.Second, "▶ live buyers", "LOCK owner buyer")
	l.send("b")
	l.waitFor(time.Minute, "breaks under pause")
	l.waitFor(time.Minute, "✗ "+slug+" broke.", "Under pause it breaks as step 13 (", "16 step 16: clears oversold", "17 step 17: the fix")
	l.send("q")
	l.waitFor(30*time.Second, "LAB-EXITED=0")
}
