package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/lab/grading"
)

// exploreLab runs lab explore with args and returns its exit status, stdout and stderr.
func exploreLab(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errw bytes.Buffer
	err := run(append([]string{"explore"}, args...), &out, &errw)
	var child *childExit
	if err != nil && !errors.As(err, &child) { // as main says it
		errw.WriteString("lab: " + unwrapUsage(err) + "\n")
	}
	return exitCode(err), out.String(), errw.String()
}

// TestExploreBadInput: whatever is wrong with the command line, explore says what in one line and
// exits 2, before anything is built.
func TestExploreBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to explore", nil, "explore needs a step"},
		{"no such step or folder", []string{"no-such-step"}, `unknown step "no-such-step"`},
		{"a fault it does not know", []string{"-faults", "pause,meteor", "04"}, `-faults: no fault "meteor"`},
		{"-nodes with a step", []string{"-nodes", "3", "15"}, "-nodes goes with your lock's folder"},
		{"no budget", []string{"-budget", "0s", "04"}, "-budget 0s"},
		{"too many buyers", []string{"04", "-buyers", "9"}, "-buyers 9"},
		{"two steps", []string{"04", "05"}, "unexpected argument"},
		{"a folder that is no lock", []string{"../steps/catalog"}, "exports no New"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := exploreLab(t, tc.args...)
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(errs, tc.want) || out != "" {
				t.Errorf("exit %d, want 2 and one line with %q; stderr:\n%s\nstdout:\n%s", code, tc.want, errs, out)
			}
		})
	}
}

// TestExploreCopyOf09: a learner's copy of step 09, explored from seed 1, breaks: exit 1, the
// shrunk program in words with the referee's sentences and the command that plays it again; -save
// writes a file lab judge judges again to the same verdict; -html a page with the program in
// words and the command that replays it above its verdict, which lab judge reads too.
func TestExploreCopyOf09(t *testing.T) {
	t.Parallel() // explore runs a binary of its own (this one: ingrader_test.go)
	dir := sharedCopy(t, "09_lua_unlock", "README.md")
	saved := filepath.Join(t.TempDir(), "found.json")
	page := filepath.Join(t.TempDir(), "found.html")
	code, out, errs := exploreLab(t, "-programs", "20", "-save", saved, "-html", page, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"shrunk from ", "verdict: ", "overlap: buyer ", "replay: go run ./lab explore -program '{", "buyer 1: "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	var jout, jerr bytes.Buffer
	if err := run([]string{"judge", saved}, &jout, &jerr); err != nil {
		t.Fatalf("lab judge of what explore saved: %v\n%s%s", err, jout.String(), jerr.String())
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	story := regexp.MustCompile(`(?s)<ul class="story">.*?<li>\d+ units? on the shelf</li>.*?<li>buyer 1: .*?</ul>\s*<p class="replay">found from seed \d+; <b>replay:</b> <code>[^<]*lab explore [^<]*</code></p>\s*<div class="verdict bad">`)
	if !story.Match(b) {
		t.Errorf("the page has no program in words, then its seed and replay command, above its verdict:\n%.2000s", b)
	}
	if bytes.Contains(b, []byte(`<p class="next">`)) {
		t.Errorf("the page names a fix for an explored program, which no step's row covers")
	}
	jout.Reset()
	if err := run([]string{"judge", page}, &jout, &jerr); err != nil {
		t.Fatalf("lab judge of explore's page: %v\n%s%s", err, jout.String(), jerr.String())
	}
}

// TestExplore17FindsNothing: the lock-free order of step 17, which sells with one atomic script,
// never lets two orders inside at once nor oversells, whatever explore plays in a few seconds:
// exit 0, and -json says how many programs were played.
func TestExplore17FindsNothing(t *testing.T) {
	t.Parallel() // explore builds and runs a binary of its own
	code, out, errs := exploreLab(t, "-budget", "3s", "-kinds", "overlap,oversold", "-json", "17")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	var res explore.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("-json: %v\n%s", err, out)
	}
	if len(res.Map) > 0 || res.Programs < 10 || res.Step != "17_atomic_stock" || !slices.Contains([]uint64{1}, res.Seed) {
		t.Errorf("17 explored: %+v", res)
	}
}

// TestExploreStoppedClock: a lock that holds a sync.Mutex from Lock to Unlock stops a bubble's
// clock once a second request of its process waits for it; explore notices, as grade does, leaves
// that bubble behind, plays the program again on the wall clock (its report notes why), counts it,
// and goes on: never a stack trace, never a silent hang.
func TestExploreStoppedClock(t *testing.T) {
	t.Parallel() // explore builds and runs a binary of its own
	p, err := grading.Inspect(sharedLearner(t, "mutex_across_wait"))
	if err != nil {
		t.Fatal(err)
	}
	req := explore.Request{Seed: 1, Budget: 3 * time.Second, Buyers: 1, Faults: []history.Fault{arena.FaultSecond}}
	var out, errw bytes.Buffer
	err = exploreRun(req, p, exploreFlags{buyers: 1, nodes: 1, asJSON: true}, nil, &out, &errw)
	if code := exitCode(err); code != 0 && code != 1 {
		t.Fatalf("exit %d (%v)\n%s\n%s", code, err, out.String(), errw.String())
	}
	var res explore.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("-json: %v\n%s", err, out.String())
	}
	if res.WallClock == 0 {
		t.Errorf("no program was played on the wall clock: %+v", res)
	}
	if regexp.MustCompile(`goroutine \d+ \[|panic:|\.go:\d+ \+0x`).MatchString(errw.String()) {
		t.Errorf("a stack trace reached the learner:\n%s", errw.String())
	}
}
