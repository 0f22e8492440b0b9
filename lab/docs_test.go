package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The documentation's test, as the Go Tour's content_test.go: every "go run ./lab …" that
// README.md and docs/*.md show, in a code block or in backticks, runs here in-process (run, as
// main calls it) and must exit as the text says; the claims the text makes beside it are checked
// where a machine can check them (docClaims).

// docCmd is one documented command.
type docCmd struct {
	where   string   // "README.md:53"
	env     []string // NAME=value before go run
	args    []string // after go run ./lab
	context string   // what the text says beside it: the rest of its sentence, or its # comment
	next    []string // the lines of the block after it when its sentence ends with ":" (a table it prints)
	para    string   // its paragraph, for flags a -h is said to list
}

var (
	goRunLab = regexp.MustCompile(`go run \./lab\b`)
	spanRe   = regexp.MustCompile("`([^`]+)`")
)

// docFiles are the files whose commands are run: README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "README.md")}, files...)
}

// parseDoc finds the commands of one Markdown file. A line that mentions go run ./lab where no
// command can be read is an error naming the line: it must not be skipped in silence.
func parseDoc(name, text string) (cmds []docCmd, errs []string) {
	lines := strings.Split(text, "\n")
	fence := ""
	var para []int // the lines of the current paragraph, outside code blocks
	flush := func() {
		if len(para) == 0 {
			return
		}
		// Join the paragraph, keeping where each of its bytes came from.
		var b strings.Builder
		var from []int
		for _, i := range para {
			s := strings.TrimSpace(lines[i]) + " "
			b.WriteString(s)
			for range s {
				from = append(from, i)
			}
		}
		p := b.String()
		for _, m := range spanRe.FindAllStringSubmatchIndex(p, -1) {
			code := strings.Join(strings.Fields(p[m[2]:m[3]]), " ")
			if !goRunLab.MatchString(code) {
				continue
			}
			where := fmt.Sprintf("%s:%d", name, from[m[0]]+1)
			rest := p[m[1]:]
			if end := regexp.MustCompile(`[.!?](\s|$)`).FindStringIndex(rest); end != nil {
				rest = rest[:end[1]]
			}
			c, err := readCmd(where, code)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			c.context, c.para = strings.TrimSpace(rest), p
			if strings.HasSuffix(strings.TrimSpace(rest), ":") {
				c.next = blockAfter(lines, para[len(para)-1]+1)
			}
			cmds = append(cmds, c)
		}
		blanked := spanRe.ReplaceAllStringFunc(p, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range goRunLab.FindAllStringIndex(blanked, -1) {
			errs = append(errs, fmt.Sprintf("%s:%d: go run ./lab outside backticks: write the command as code", name, from[m[0]]+1))
		}
		para = nil
	}
	for i, l := range lines {
		trim := strings.TrimSpace(l)
		if f := fenceOf(trim); f != "" && (fence == "" || strings.HasPrefix(trim, fence)) {
			flush()
			if fence == "" {
				fence = f
			} else {
				fence = ""
			}
			continue
		}
		if fence != "" {
			if !goRunLab.MatchString(l) {
				continue
			}
			code, comment := splitComment(trim)
			for _, seg := range regexp.MustCompile(`&&|;|\|\|`).Split(code, -1) {
				seg = strings.TrimPrefix(strings.TrimSpace(seg), "$ ")
				if !goRunLab.MatchString(seg) {
					continue
				}
				c, err := readCmd(fmt.Sprintf("%s:%d", name, i+1), seg)
				if err != nil {
					errs = append(errs, err.Error())
					continue
				}
				c.context = comment
				cmds = append(cmds, c)
			}
			continue
		}
		if trim == "" || regexp.MustCompile(`^([-*+] |\d+\. |#|\|)`).MatchString(trim) {
			flush()
		}
		if trim != "" {
			para = append(para, i)
		}
	}
	flush()
	return cmds, errs
}

func fenceOf(trim string) string {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(trim, f) {
			return f
		}
	}
	return ""
}

// blockAfter is the next block of non-blank lines from line i on.
func blockAfter(lines []string, i int) []string {
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	var out []string
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		out = append(out, strings.TrimSpace(lines[i]))
	}
	return out
}

// splitComment cuts a shell line at its # comment (one outside quotes).
func splitComment(s string) (code, comment string) {
	q := rune(0)
	for i, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q == 0 && (r == '"' || r == '\''):
			q = r
		case q == 0 && r == '#' && (i == 0 || s[i-1] == ' '):
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
		}
	}
	return s, ""
}

// readCmd reads "[NAME=value …] go run ./lab args…" as a shell would, refusing what this test
// cannot run as written (pipes, substitutions, unbalanced quotes, a placeholder other than a
// folder to grade).
func readCmd(where, s string) (docCmd, error) {
	c := docCmd{where: where}
	if strings.ContainsAny(regexp.MustCompile(`<[^<>]+>`).ReplaceAllString(s, "x"), "|><`$") || strings.Contains(s, "…") || strings.Contains(s, "...") {
		return c, fmt.Errorf("%s: cannot run %q as written (a pipe, a redirection, a substitution or an ellipsis)", where, s)
	}
	var words []string
	var w strings.Builder
	q, in := rune(0), false
	for _, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			q, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, w.String()), false
				w.Reset()
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if q != 0 {
		return c, fmt.Errorf("%s: unbalanced quote in %q", where, s)
	}
	if in {
		words = append(words, w.String())
	}
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[0]) {
		c.env, words = append(c.env, words[0]), words[1:]
	}
	if len(words) < 3 || words[0] != "go" || words[1] != "run" || words[2] != "./lab" {
		return c, fmt.Errorf("%s: cannot read %q as [NAME=value …] go run ./lab …", where, s)
	}
	c.args = words[3:]
	for i, a := range c.args {
		if strings.Contains(a, "<") && !(i > 0 && (c.args[0] == "grade" || c.args[i-1] == "-dir")) {
			return c, fmt.Errorf("%s: placeholder %q in %q: only the folder of grade or -dir may be one", where, a, s)
		}
	}
	return c, nil
}

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
	docFilesDir = t.TempDir()
	defer func() { docFilesDir = "" }()
	memo := &playMemo{orig: play, reps: map[string]*referee.Report{}, errs: map[string]error{}}
	play, docMemo = memo.play, memo
	t.Cleanup(func() { play, docMemo = memo.orig, nil })
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
			memo.mu.Lock()
			memo.served = map[string]bool{}
			memo.mu.Unlock()
			runDocCmd(t, c)
		})
	}
	for _, s := range skipped {
		t.Log("not run, opens the terminal lab:", s)
	}
}

// notHeadless says why c is not run here: the terminal lab needs a terminal (the tmux test drives
// it). "" for a headless command, -h included.
func notHeadless(c docCmd) string {
	if len(c.args) == 0 {
		return "the bare lab is the terminal UI"
	}
	if strings.HasPrefix(c.args[0], "-") && !slices.ContainsFunc(c.args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) {
		return "its flags open the terminal UI"
	}
	return ""
}

// runDocCmd runs one command on what this machine has and checks it.
func runDocCmd(t *testing.T, c docCmd) {
	inVirtualTime(t)
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
	case backend == "server":
		if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CI") != "true" {
			t.Skipf("%s needs redis-server, which this machine lacks", c.where)
		}
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
// folder that is not there is a fresh copy of step 09 made for the test, as module 7 has a
// learner make one.
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
		args[i] = copyStep(t, "09_lua_unlock", "README.md")
		t.Logf("grade %s: a copy of step 09 stands in for the learner's folder: %s", a, args[i])
		return args
	}
	return args
}

// docClaims checks what the text says beside a command where a machine can check it.
func docClaims(t *testing.T, c docCmd, args []string, stdout, stderr string, took time.Duration) {
	ctx := c.context
	// A run's report: the verdict is its row of the matrix, and the kinds the text names are in it.
	if args[0] == "run" && !slices.Contains(args, "-repeat") {
		st, sc := flagValue(args, "-step"), flagValue(args, "-scenario")
		step, err := catalog.Find(st)
		if err != nil {
			t.Fatal(err)
		}
		var rep referee.Report
		if slices.Contains(args, "-json") {
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("%s: -json printed no JSON report: %v", c.where, err)
			}
		} else if r := findReport(step, steps.Scenario(sc), backendOf(args)); r != nil {
			rep = *r
		}
		replay := func() *referee.Report {
			r, err := docMemo.orig(step, steps.Scenario(sc), backendOf(args))
			if err != nil {
				return &referee.Report{Unjudged: []steps.Kind{"?"}}
			}
			return r
		}
		want := step.Expect[steps.Scenario(sc)]
		if len(want) > 0 || len(rep.Violations) > 0 {
			if !slices.Equal(rep.Violations, want) {
				confirm(t, c.where, fmt.Sprintf("%s under %s found %v; the matrix says %v", step.Slug, sc, rep.Violations, want),
					func() bool { return slices.Equal(replay().Violations, want) })
			}
		}
		for _, m := range regexp.MustCompile("`([a-z-]+)`").FindAllStringSubmatch(ctx, -1) {
			if k := steps.Kind(m[1]); slices.Contains(allKinds(), k) && !slices.Contains(rep.Violations, k) {
				confirm(t, c.where, fmt.Sprintf("the text names `%s`; the run found %v", k, rep.Violations),
					func() bool { return slices.Contains(replay().Violations, k) })
			}
		}
		if strings.Contains(ctx, "command") && raceDetector {
			t.Logf("%s: a count of commands follows the machine's speed, and -race slows every goroutine: the text's count is checked without -race", c.where)
		} else if strings.Contains(ctx, "command") {
			checkCount(t, c.where, ctx, rep.CommandsPerOrder, func() float64 { return replay().CommandsPerOrder })
		}
	}
	// What the text quotes of a report or a grade, in backticks in the sentence after the command,
	// is in what the command printed (quotedOutput).
	if (args[0] == "run" || args[0] == "grade") && !slices.Contains(args, "-json") {
		for _, q := range quotedOutput(ctx) {
			if !quoteRe(q).MatchString(stdout) {
				t.Errorf("%s: the text quotes `%s`; go run ./lab %s printed no such line:\n%s", c.where, q, strings.Join(c.args, " "), stdout)
			}
		}
	}
	// A page the command wrote (-html FILE): its runs judged again, its size (checkDocPage).
	if page := flagValue(args, "-html"); page != "" {
		checkDocPage(t, c.where, page, ctx)
	}
	// Saved runs judged again: every one to the verdict it earned when it was played.
	if args[0] == "judge" {
		m := regexp.MustCompile(`(\d+) runs? judged again from their histories: (\d+) as when played, 0 differ, 0 without a verdict`).FindStringSubmatch(stdout)
		if m == nil || m[1] != m[2] {
			t.Errorf("%s: judge did not give every saved run its verdict again:\n%s", c.where, stdout)
		}
	}
	// A matrix on an existing server (one node, no replica, not the lab's to restart): the
	// failover and restart cells say they were skipped and why, and every other has a verdict.
	if args[0] == "matrix" && strings.HasPrefix(backendOf(args), "redis://") {
		for _, why := range []string{"skipped (failover", "replica", "restart", "the lab owns"} {
			if !strings.Contains(stdout, why) {
				t.Errorf("%s: on one node the matrix does not say %q:\n%s", c.where, why, stdout)
			}
		}
		if strings.Contains(stdout, "| ?") || strings.Contains(stdout, " ? |") {
			t.Errorf("%s: on one node a cell has no verdict:\n%s", c.where, stdout)
		}
	}
	// A JSON shape shown in a comment: the output is JSON of that shape, with those keys.
	if strings.HasPrefix(ctx, "[") || strings.HasPrefix(ctx, "{") {
		var v any
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("%s: the comment shows JSON; the output is not: %v", c.where, err)
		}
		first, _ := v.(map[string]any)
		if arr, ok := v.([]any); ok && strings.HasPrefix(ctx, "[") && len(arr) > 0 {
			first, _ = arr[0].(map[string]any)
		}
		for _, m := range regexp.MustCompile(`"([a-z_]+)"\s*:`).FindAllStringSubmatch(ctx, -1) {
			if _, ok := first[m[1]]; !ok {
				t.Errorf("%s: the comment shows the key %q; the output's first object has none", c.where, m[1])
			}
		}
	}
	// A table the text says the command prints: each of its rows is in the output, cell for cell.
	if len(c.next) > 2 && strings.HasPrefix(c.next[0], "|") {
		header := splitRow(c.next[0])
		got := map[string][]string{}
		for _, l := range strings.Split(stdout, "\n") {
			if cells := splitRow(l); len(cells) > 1 {
				got[cells[0]] = cells
			}
		}
		for _, l := range c.next[2:] {
			want := splitRow(l)
			row, ok := got[want[0]]
			if !ok || len(row) != len(want) {
				t.Errorf("%s: the text's row\n  %s\nis not in what the command prints:\n%s", c.where, l, stdout)
				continue
			}
			for i := 1; i < len(want) && i < len(header); i++ {
				if row[i] == want[i] {
					continue
				}
				st, err := catalog.Find(want[0])
				if err != nil {
					t.Errorf("%s: %s × %s printed %q, the text says %q", c.where, want[0], header[i], row[i], want[i])
					continue
				}
				sc := steps.Scenario(header[i])
				msg := fmt.Sprintf("%s × %s printed %q, the text says %q", st.Slug, sc, row[i], want[i])
				confirm(t, c.where, msg, func() bool {
					rep, err := docMemo.orig(st, sc, backendOf(args))
					return err == nil && verdictCell(rep) == want[i]
				})
			}
		}
	}
	// A -h said to list flags: each flag the paragraph names is in the usage.
	if slices.Contains(args, "-h") {
		for _, m := range regexp.MustCompile("`(-[a-z]+)`").FindAllStringSubmatch(c.para, -1) {
			if !strings.Contains(stderr, "  "+m[1]) {
				t.Errorf("%s: the text names %s; -h does not list it:\n%s", c.where, m[1], stderr)
			}
		}
	}
	// A duration: a shared machine's timing is no verdict, but the text's figure is shown beside it.
	if m := regexp.MustCompile(`(about|under|in) [0-9]+ ?(s|min|minutes?|seconds?)\b`).FindString(ctx); m != "" {
		t.Logf("%s: the text says %q; it took %s here (%d cores shared with other work: not judged)", c.where, m, took.Round(time.Second), runtime.NumCPU())
	}
}

// quotedOutput is what a sentence after a command quotes of its output: its spans in backticks,
// but a command or a kind alone (a kind is checked against the verdict, confirm and all).
func quotedOutput(ctx string) []string {
	var out []string
	for _, m := range spanRe.FindAllStringSubmatch(ctx, -1) {
		q := strings.Join(strings.Fields(m[1]), " ")
		if goRunLab.MatchString(q) || slices.Contains(allKinds(), steps.Kind(q)) {
			continue
		}
		out = append(out, q)
	}
	return out
}

// quoteRe matches a quote in a command's output: its words as written, the spaces of a quote
// broken across lines as any space, and any number as any number — a duration or a count is one
// run's (the documentation says so), the words around it are the lab's.
func quoteRe(q string) *regexp.Regexp {
	num := regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?`)
	var b strings.Builder
	last := 0
	for _, m := range num.FindAllStringIndex(q, -1) {
		b.WriteString(regexp.QuoteMeta(q[last:m[0]]))
		b.WriteString(`[0-9]+(?:\.[0-9]+)?`)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(q[last:]))
	return regexp.MustCompile(regexp.MustCompile(` +`).ReplaceAllString(b.String(), `\s+`))
}

// checkCount checks a count of commands the text gives in words: "over a thousand", "over 500",
// "3–4"; replay plays the cell again for confirm.
func checkCount(t *testing.T, where, ctx string, got float64, replay func() float64) {
	t.Helper()
	words := map[string]float64{"a hundred": 100, "a thousand": 1000, "ten thousand": 10000}
	if m := regexp.MustCompile(`(?:over|more than|above) (a hundred|a thousand|ten thousand|[0-9][0-9,]*)`).FindStringSubmatch(ctx); m != nil {
		n, ok := words[m[1]]
		if !ok {
			n, _ = strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		}
		if got <= n {
			confirm(t, where, fmt.Sprintf("the text says %q commands per order; the run counted %.1f", m[0], got),
				func() bool { return replay() > n })
		}
		return
	}
	if m := regexp.MustCompile(`([0-9.]+)\s*[–-]\s*([0-9.]+) commands`).FindStringSubmatch(ctx); m != nil {
		lo, _ := strconv.ParseFloat(m[1], 64)
		hi, _ := strconv.ParseFloat(m[2], 64)
		if got < lo || got > hi {
			confirm(t, where, fmt.Sprintf("the text says %s; the run counted %.1f", m[0], got),
				func() bool { g := replay(); return g >= lo && g <= hi })
		}
	}
}

// confirmReplays is how many fresh plays decide a contradicted claim.
const confirmReplays = 3

// confirm decides a claim one play contradicted (msg says how), by playing it confirmReplays
// times more: when no play holds it, the text is wrong and the test fails; when some do, the text
// is right and the cell or count follows the machine's load — a fact about the lab's timing (the
// steps' own tests judge each cell), logged with its tally for whoever owns that timing. Hazard:
// this is not a retry until green: a text that no play bears out fails every time.
func confirm(t *testing.T, where, msg string, holds func() bool) {
	t.Helper()
	n := 0
	for range confirmReplays {
		if holds() {
			n++
		}
	}
	if n == 0 {
		t.Errorf("%s: %s, and in %d plays more", where, msg, confirmReplays)
		return
	}
	t.Logf("%s: LOAD-SENSITIVE: %s; the text held in %d of %d plays more (%d cores shared with other work)", where, msg, n, confirmReplays, runtime.NumCPU())
}

// verdictCell is a report's cell as the matrix prints it.
func verdictCell(rep *referee.Report) string {
	switch {
	case !rep.Complete():
		return "?"
	case len(rep.Violations) > 0:
		return joinKinds(rep.Violations)
	}
	return "✓"
}

// splitRow splits a Markdown table row into its trimmed cells; nil for a line that is none.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	if !strings.HasPrefix(l, "|") {
		return nil
	}
	cells := strings.Split(strings.Trim(l, "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func backendOf(args []string) string {
	if b := flagValue(args, "-redis"); b != "" {
		return b
	}
	return os.Getenv("LAB_REDIS")
}

// findReport is the report the memo holds for a cell a text command played.
func findReport(st *steps.Step, sc steps.Scenario, backend string) *referee.Report {
	if m := docMemo; m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.reps[memoKey(st, sc, backend)]
	}
	return nil
}

// allKinds is every kind some scenario judges.
func allKinds() []steps.Kind {
	var out []steps.Kind
	for _, sc := range scenario.All() {
		for _, k := range sc.Judges {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// TestParseDoc: commands are read from code blocks (with their # comment) and from backticks,
// also across a line break; what cannot be run as written is an error naming its line.
func TestParseDoc(t *testing.T) {
	doc := "Intro `go run ./lab run -step 07\n  -scenario load` counts well over a thousand (`flood`). Then more.\n" +
		"\n```sh\nLAB_REDIS=server go run ./lab run -step 4 -scenario slow   # one scenario\n" +
		"go build ./... && go run ./lab list steps\n```\n\n" +
		"Run `go run ./lab matrix` prints:\n\n| step | a |\n|---|---|\n| 01_naive | ✓ |\n\n" +
		"Grade it: `go run ./lab grade steps/<your folder>`.\n\n" +
		"Bad: `go run ./lab run -step <n>`, `go run ./lab matrix | head`, `go run ./lab run \"x`.\n" +
		"And go run ./lab in prose.\n"
	cmds, errs := parseDoc("doc.md", doc)
	type got struct{ where, env, args, ctx string }
	var g []got
	for _, c := range cmds {
		g = append(g, got{c.where, strings.Join(c.env, " "), strings.Join(c.args, " "), c.context})
	}
	want := []got{
		{"doc.md:1", "", "run -step 07 -scenario load", "counts well over a thousand (`flood`)."},
		{"doc.md:5", "LAB_REDIS=server", "run -step 4 -scenario slow", "one scenario"},
		{"doc.md:6", "", "list steps", ""},
		{"doc.md:9", "", "matrix", "prints:"},
		{"doc.md:15", "", "grade steps/<your folder>", "."},
	}
	if !slices.Equal(g, want) {
		t.Errorf("commands:\n%q\nwant:\n%q", g, want)
	}
	if len(cmds) > 3 && !slices.Equal(cmds[3].next, []string{"| step | a |", "|---|---|", "| 01_naive | ✓ |"}) {
		t.Errorf("the table after \"prints:\": %q", cmds[3].next)
	}
	wantErrs := []string{"doc.md:17: placeholder", "doc.md:17: cannot run", "doc.md:17: unbalanced quote", "doc.md:18: go run ./lab outside backticks"}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors: %q", errs)
	}
	for i, e := range errs {
		if !strings.HasPrefix(e, wantErrs[i]) {
			t.Errorf("error %d: %q, want %q…", i, e, wantErrs[i])
		}
	}
}
