package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The documentation's test, as the Go Tour's content_test.go: every "go run ./lab …" that
// README.md and docs/*.md show, in a code block or in backticks, runs here in-process (run, as
// main calls it) and must exit as the text says; the claims the text makes beside it are checked
// where a machine can check them (docClaims).

// playMemo plays each cell once for all the commands that show it (matrix and matrix -json, run
// and run -json): the matrix takes minutes. A command that plays one cell twice (-repeat) gets a
// fresh play each time after the first.
type playMemo struct {
	mu     sync.Mutex
	orig   func(*steps.Step, steps.Scenario, string) (*referee.Report, error)
	reps   map[string]*referee.Report
	errs   map[string]error
	served map[string]bool // by the command running now
}

func memoKey(st *steps.Step, sc steps.Scenario, backend string) string {
	if backend == "" {
		backend = "embedded"
	}
	return st.Slug + "|" + string(sc) + "|" + backend
}

func (m *playMemo) play(st *steps.Step, sc steps.Scenario, backend string) (*referee.Report, error) {
	k := memoKey(st, sc, backend)
	m.mu.Lock()
	rep, ok := m.reps[k]
	err := m.errs[k]
	if ok && !m.served[k] {
		m.served[k] = true
		m.mu.Unlock()
		return rep, err
	}
	m.mu.Unlock()
	rep, err = m.orig(st, sc, backend)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil || errors.Is(err, arena.ErrCannotStage) {
		m.reps[k], m.errs[k] = rep, err
	}
	m.served[k] = true
	return rep, err
}

// raceDetector is set when the test runs under -race (race_test.go).
var raceDetector bool

// docMemo is the memo TestDocumentedCommands plays through, while it runs.
var docMemo *playMemo

// docFiles is where the documented commands' files (run -save runs.json, judge runs.json) live
// while TestDocumentedCommands runs: one folder for all of them, so that a file one command saves
// is there for the next, and none lands in the repository.
var docFilesDir string

// TestDocumentedCommands runs every documented go run ./lab command and checks what the text says.
func TestDocumentedCommands(t *testing.T) {
	var all []docCmd
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds, errs := parseDoc(strings.TrimPrefix(filepath.ToSlash(f), "../"), string(b))
		for _, e := range errs {
			t.Error(e)
		}
		all = append(all, cmds...)
	}
	if len(all) == 0 {
		t.Fatal("no go run ./lab command found in README.md and docs/*.md")
	}
	if !slices.ContainsFunc(all, func(c docCmd) bool { return len(c.env) > 0 }) {
		// Beside the tests that wait on a terminal, a browser or a grader: most of what it
		// plays is in virtual time, on the CPU the waiting tests leave. A command shown with
		// an environment (t.Setenv) keeps it in the sequential phase, as go test requires.
		t.Parallel()
	}
	docFilesDir = t.TempDir()
	t.Cleanup(func() { docFilesDir = "" }) // after the parallel subtests too
	memo := &playMemo{orig: play, reps: map[string]*referee.Report{}, errs: map[string]error{}}
	docMemo = memo // play is the memo's in each command that plays in this process (runDocCmd)
	t.Cleanup(func() { docMemo = nil })
	seen := map[string]string{}
	var skipped []string
	for _, c := range all {
		key := strings.Join(append(slices.Clone(c.env), c.args...), " ")
		if first, ok := seen[key]; ok && c.context == "" && c.next == nil {
			t.Logf("%s: %s is run at %s", c.where, key, first)
			continue
		}
		seen[key] = c.where
		if why := notHeadless(c); why != "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s): %s", c.where, "go run ./lab "+strings.Join(c.args, " "), why))
			continue
		}
		t.Run(strings.ReplaceAll(c.where, "/", "_"), func(t *testing.T) {
			if gradesAFolder(c) {
				t.Parallel() // see gradesAFolder
			} else {
				memo.mu.Lock()
				memo.served = map[string]bool{}
				memo.mu.Unlock()
			}
			runDocCmd(t, c)
		})
	}
	for _, s := range skipped {
		t.Log("not run, opens the terminal lab:", s)
	}
}

// gradesAFolder says whether c is a lab grade of a learner's folder that is no exercise's answer
// (those are graded together, gradeExercise), with no environment of its own and no file a later
// command reads: such a grade runs its grader, a process of its own, and touches none of what the
// other commands share (play, the memo, the package's bubble, the environment), so it runs in
// parallel, after the others.
func gradesAFolder(c docCmd) bool {
	if len(c.args) == 0 || c.args[0] != "grade" || len(c.env) > 0 || slices.Contains(c.args, "-save") {
		return false
	}
	_, answer := exerciseOf(c.args)
	return !answer
}

// notHeadless says why c is not run here: the terminal lab needs a terminal (the tmux test drives
// it). "" for a headless command, -h included.
func notHeadless(c docCmd) string {
	if len(c.args) == 0 {
		return "the bare lab is the terminal UI"
	}
	help := slices.ContainsFunc(c.args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
	if strings.HasPrefix(c.args[0], "-") && !help {
		return "its flags open the terminal UI"
	}
	if c.args[0] == "serve" && !help {
		return "lab serve serves the terminal lab until Ctrl-C (lab/serve's tests drive it over SSH)"
	}
	return ""
}

// slowOnTheWallClock says whether args, on backend, wait on the wall clock for many seconds: a
// matrix on a server (each cell a run of real time: 18 s for three steps), a Sentinel's failover
// (5 s), an exploration of a step that holds (17: nothing breaks, so it plays programs for its
// whole -budget, 60 s by default, a core busy all along). The documentation's test runs them under
// LAB_SLOW=1 (CI); without it, the same backends' single runs (a second or less each) and
// internal/redisenv's tests play those backends, and TestExplore17FindsNothing explores 17 for 3 s.
func slowOnTheWallClock(args []string, backend string) bool {
	virtual := backend == "" || backend == "embedded"
	return !virtual && slices.Contains(args, "matrix") || backend == "sentinel" || exploresAStepThatHolds(args)
}

// exploresAStepThatHolds says whether args explore a step the catalog says holds (its challenge
// cannot be reached) for a budget of 10 s or more.
func exploresAStepThatHolds(args []string) bool {
	if len(args) < 2 || args[0] != "explore" {
		return false
	}
	budget := time.Minute // lab explore's default
	if b := flagValue(args, "-budget"); b != "" {
		d, err := time.ParseDuration(b)
		if err != nil {
			return false // bad input: exits 2 at once
		}
		budget = d
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if a != "-json" && !strings.Contains(a, "=") {
				i++ // the flag's value
			}
			continue
		}
		st, err := catalog.Find(a)
		if err != nil {
			return false // a folder of the learner's: it may break at once
		}
		ch, ok := catalog.ChallengeOf(st.Slug)
		return ok && ch.Holds && budget >= 10*time.Second
	}
	return false
}

// runDocCmd runs one command on what this machine has and checks it.
func runDocCmd(t *testing.T, c docCmd) {
	if !gradesAFolder(c) { // a grade plays in its grader, never in this process's bubble
		inVirtualTime(t)
		m := docMemo
		play = m.play
		t.Cleanup(func() { play = m.orig }) // before inVirtualTime gives play back
	}
	args := slices.Clone(c.args)
	for _, e := range c.env {
		name, val, _ := strings.Cut(e, "=")
		t.Setenv(name, val)
	}
	backend := os.Getenv("LAB_REDIS")
	for i, a := range args {
		if (strings.HasSuffix(a, ".json") || strings.HasSuffix(a, ".html")) && !strings.Contains(a, "/") && docFilesDir != "" {
			args[i] = filepath.Join(docFilesDir, a) // a file the text names: in the test's folder
		}
		if strings.HasPrefix(a, "cases/") {
			args[i] = filepath.Join("..", a) // a case of the museum, from the module's root
		}
		if a == "-redis" && i+1 < len(args) {
			backend = args[i+1]
			if strings.HasPrefix(backend, "redis://") {
				// An existing server: this machine's own, on a free port, in place of the one shown.
				srv := needRedisServer(t)
				re := regexp.MustCompile(`^redis://[^/]+`)
				args[i+1] = re.ReplaceAllString(backend, "redis://"+srv.InventoryOptions().Addr)
				t.Logf("%s: %s stands for a redis-server this test started: %s", c.where, backend, args[i+1])
			}
		}
	}
	switch {
	case backend == "server" || backend == "sentinel": // a Sentinel is redis-server --sentinel
		if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CI") != "true" {
			t.Skipf("%s needs redis-server, which this machine lacks", c.where)
		}
	}
	if slowOnTheWallClock(args, backend) {
		steptest.Slow(t, c.where+": it waits on the wall clock for many seconds")
	}
	switch {
	case slices.Contains(args, "matrix") && testing.Short():
		t.Skipf("%s: the matrix takes minutes; -short skips it", c.where)
	case len(args) > 1 && args[0] == "judge" && testing.Short():
		if _, err := os.Stat(args[len(args)-1]); err != nil {
			t.Skipf("%s: judges what a matrix wrote, and -short skips the matrix", c.where)
		}
	}
	var want []int // the exit statuses the text gives
	for _, m := range regexp.MustCompile(`\bexits? (?:with )?(?:status |code )?(\d)\b`).FindAllStringSubmatch(c.context, -1) {
		n, _ := strconv.Atoi(m[1])
		want = append(want, n)
	}
	ag, answer := exerciseOf(args)
	switch {
	case answer && len(want) > 0:
		// An exercise's answer: its grade is the one the text gives (exercises_test.go).
	case answer && ag.want != "":
		want = []int{0} // an exercise's target: its answer meets it
	case answer:
		want = []int{0, 1}
	case len(args) > 0 && args[0] == "grade" && !slices.Equal(want, []int{2}):
		// A grade is given: which one is the lock's, not the command's. A folder the text shows
		// as an example is made from step 09 (a text that says the grade exits 2 shows bad input).
		want = append(want, 0, 1)
		args = gradeFolder(t, args)
	case len(want) == 0:
		want = []int{0}
	}
	var out, errw bytes.Buffer
	start := time.Now()
	var err error
	if answer { // graded once with every other answer, as lab grade grades it (exercises_test.go)
		var stdout string
		stdout, err = gradeExercise(t, args)
		out.WriteString(stdout)
	} else {
		err = run(args, &out, &errw)
	}
	took := time.Since(start)
	if errors.Is(err, redisenv.ErrNoDocker) && os.Getenv("CI") != "true" {
		t.Skipf("%s needs Docker: %v", c.where, err)
	}
	code := exitCode(err)
	if !slices.Contains(want, code) {
		t.Fatalf("%s: go run ./lab %s exits %d, the text says %v: %v\nstdout:\n%s\nstderr:\n%s", c.where, strings.Join(c.args, " "), code, want, err, out.String(), errw.String())
	}
	t.Logf("%s: go run ./lab %s: exit %d in %s", c.where, strings.Join(args, " "), code, took.Round(time.Millisecond))
	docClaims(t, c, args, out.String(), errw.String(), took)
}

// gradeFolder makes a documented grade folder runnable: a placeholder (steps/<your folder>) or a
// folder that is not there is a copy of step 09, as module 7 has a learner make one (sharedCopy's,
// which the grade tests grade too).
func gradeFolder(t *testing.T, args []string) []string {
	args = slices.Clone(args)
	for i := 1; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			if a == "-nodes" || a == "-redis" {
				i++
			}
			continue
		}
		if _, err := os.Stat(filepath.Join("..", a)); err == nil && !strings.Contains(a, "<") {
			args[i] = filepath.Join("..", a)
			return args
		}
		args[i] = sharedCopy(t, "09_lua_unlock", "README.md")
		t.Logf("grade %s: a copy of step 09 stands in for the learner's folder: %s", a, args[i])
		return args
	}
	return args
}
