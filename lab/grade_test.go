package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/redis/go-redis/v9"
)

// grade runs lab grade with args as main would and returns the exit status, stdout and stderr.
// Without -explore in args it does not explore (-explore 0): 30 s a grade is too long for the
// tests, and exploring has tests of its own (TestGradeExplores).
func grade(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	if !slices.Contains(args, "-explore") {
		args = append([]string{"-explore", "0"}, args...)
	}
	var out, errw bytes.Buffer
	err := run(append([]string{"grade"}, args...), &out, &errw)
	if err != nil && exitCode(err) != 2 {
		t.Logf("lab grade %v: %v", args, err)
	}
	var child *childExit
	if err != nil && !errors.As(err, &child) { // as main says it
		errw.WriteString("lab: " + unwrapUsage(err) + "\n")
	}
	return exitCode(err), out.String(), errw.String()
}

// scenariosBroken lists the scenarios under which st's row expects a violation, in matrix order.
func scenariosBroken(st *steps.Step) []string {
	var out []string
	for _, sc := range scenario.Names() {
		if len(st.Expect[sc]) > 0 {
			out = append(out, string(sc))
		}
	}
	return out
}

// TestGradeCopyOf09: a learner's unchanged copy of step 09 is graded as step 09 is: exit 1,
// pause and failover named (pause with 08's watchdog's foreign-renewal), a sentence under each
// violation, and its row the catalog's.
func TestGradeCopyOf09(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	// End to end: the real grader, built with the copy laid over it.
	dir := builtCopy(t, "09_lua_unlock", "README.md")
	code, out, errs := grade(t, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
	}
	for sc, kinds := range map[string]string{"pause": "overlap, oversold, foreign-renewal", "failover": "overlap, oversold"} {
		if !regexpLine(out, `^  `+sc+` +`+kinds+`$`) {
			t.Errorf("the grade does not name %s with %s:\n%s", sc, kinds, out)
		}
	}
	if !strings.Contains(out, "overlap: buyer ") || !strings.Contains(out, "oversold: ") {
		t.Errorf("no referee's sentence under the violations:\n%s", out)
	}
	st, _ := catalog.Find("09")
	if want := strings.Join(scenariosBroken(st), ", "); !strings.Contains(errs, "violated "+
		strconv.Itoa(len(scenariosBroken(st)))+" of "+strconv.Itoa(len(scenario.Names()))+" scenarios: "+want) {
		t.Errorf("the verdict line does not list step 09's row (%s):\n%s", want, errs)
	}
}

// TestGradeCopyOf17: the lock-free order of step 17 passes every scenario: exit 0.
func TestGradeCopyOf17(t *testing.T) {
	t.Parallel() // grade runs a binary of its own (this one: ingrader_test.go)
	dir := sharedCopy(t, "17_atomic_stock", "README.md", "idea_test.go")
	code, out, errs := grade(t, dir)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "| "+filepath.ToSlash(filepath.Join("steps", filepath.Base(dir)))+" |"+strings.Repeat(" ✓ |", len(scenario.Names()))) {
		t.Errorf("want a row of ✓:\n%s", out)
	}
}

// TestGradeQuorumWithoutOrder: a copy of step 15 graded with -nodes 3 (the flag after the folder)
// as JSON earns step 15's row; and a copy of 09 without its Order is placed by steps.DefaultOrder,
// which is 09's handler, so it earns 09's row.
func TestGradeQuorumWithoutOrder(t *testing.T) {
	t.Parallel() // grade runs a binary of its own (this one: ingrader_test.go)
	for _, tc := range []struct {
		slug string
		drop []string
		args []string
	}{
		{"15_redlock", []string{"README.md", "idea_test.go"}, []string{"-json", "-nodes", "3"}},
		{"09_lua_unlock", []string{"README.md", "order.go", "source.go"}, []string{"-json"}},
	} {
		dir := sharedCopy(t, tc.slug, tc.drop...)
		code, out, errs := grade(t, append([]string{dir}, tc.args...)...)
		var row []cell
		if err := json.Unmarshal([]byte(out), &row); err != nil || len(row) != len(scenario.Names()) {
			t.Fatalf("%s: exit %d, not a JSON row (%v):\n%s\n%s", tc.slug, code, err, out, errs)
		}
		st, _ := catalog.Find(tc.slug)
		for _, c := range row {
			want := st.Expect[steps.Scenario(c.Scenario)]
			if !slices.Equal(c.Violations, want) && !(len(want) == 0 && len(c.Violations) == 0) {
				t.Errorf("%s copy under %s: %v, step %s's row says %v", tc.slug, c.Scenario, c.Violations, tc.slug, want)
			}
			if len(c.Explain) != len(c.Violations) {
				t.Errorf("%s copy under %s: %d sentences for %d violations", tc.slug, c.Scenario, len(c.Explain), len(c.Violations))
			}
		}
		if code != 1 {
			t.Errorf("%s copy: exit %d, want 1 (its row has violations)", tc.slug, code)
		}
	}
}

// TestGradeBadInput: whatever is wrong with the folder, grade says what in one line and exits 2,
// before anything is built.
func TestGradeBadInput(t *testing.T) {
	write := func(src string) string {
		dir := learnerFolder(t)
		if err := os.WriteFile(filepath.Join(dir, "lock.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	const head = "package lock\n\nimport (\n\t\"context\"\n\n\t\"github.com/lockstep-lab/lockstep/steps\"\n)\n\n"
	const okNew = "func New(p steps.Proc) steps.Locker { return nil }\n"
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "go.mod"), []byte("module example.com/mine\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no folder", nil, "grade needs the folder"},
		{"no such folder", []string{"../steps/no-such-folder"}, "no such folder"},
		{"a file", []string{"../go.mod"}, "is a file"},
		{"not a Go package", []string{learnerFolder(t)}, "has no Go files"},
		{"outside the module", []string{outside}, "in module example.com/mine"},
		{"a package with no New", []string{"../steps/catalog"}, "exports no New"},
		{"package main", []string{"."}, "is package main"},
		{"not a Locker package", []string{write("package notlock\n\nfunc New() int { return 1 }\n")}, "New is func New() int; the lab needs func New(steps.Proc) steps.Locker"},
		{"New returns the concrete type", []string{write(head + "type L struct{ steps.Locker }\n\nfunc New(p steps.Proc) *L { return nil }\n\nvar _ = context.Background\n")}, "New is func New(p steps.Proc) *L"},
		{"New is a variable", []string{write(head + "var New = func(p steps.Proc) steps.Locker { return nil }\n\nvar _ = context.Background\n")}, "New is a var"},
		{"Order without its context", []string{write(head + okNew + "func Order(l steps.Locker, s steps.Shop) error { return nil }\n\nvar _ = context.Background\n")}, "Order is func Order(l steps.Locker, s steps.Shop) error; the lab needs func Order(context.Context, steps.Locker, steps.Shop) error"},
		{"generic New", []string{write(head + "func New[T any](p steps.Proc) steps.Locker { return nil }\n\nvar _ = context.Background\n")}, "New is func New[T any]"},
		{"does not parse", []string{write("package lock\n\nfunc New(\n")}, "does not parse: steps/gradetest-"},
		{"-nodes out of range", []string{"-nodes", "0", "../steps/09_lua_unlock"}, "-nodes 0"},
		{"-nodes after the folder", []string{"../steps/no-such-folder", "-nodes", "x"}, "invalid value \"x\" for flag -nodes"},
		{"two folders", []string{"../steps/09_lua_unlock", "../steps/17_atomic_stock"}, "unexpected argument"},
		{"-want of no step", []string{"-want", "99", "../steps/09_lua_unlock"}, "-want 99: unknown step"},
		{"-want of no scenario", []string{"../steps/09_lua_unlock", "-want", "04,nope=ok"}, `"nope=ok" is not scenario=verdict`},
		{"-name saves nothing", []string{"-name", "ada", "../steps/09_lua_unlock"}, "-name names a saved grade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := grade(t, tc.args...)
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(errs, tc.want) || out != "" {
				t.Errorf("exit %d, want 2 and one line with %q; stderr:\n%s\nstdout:\n%s", code, tc.want, errs, out)
			}
		})
	}
}

// TestGradeDoesNotBuild: a learner's package that parses but does not compile is bad input: one
// line with the compiler's first error, and the command that shows them all.
func TestGradeDoesNotBuild(t *testing.T) {
	dir := copyStep(t, "17_atomic_stock", "README.md", "idea_test.go", "lock_test.go")
	b, err := os.ReadFile(filepath.Join(dir, "lock.go"))
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("return &Locker{}"), []byte("return &Locker{missing: 1}"), 1)
	if err := os.WriteFile(filepath.Join(dir, "lock.go"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := grade(t, dir)
	last := strings.Split(strings.TrimSpace(errs), "\n")
	if code != 2 || !strings.Contains(last[len(last)-1], "does not build: steps/gradetest-") ||
		!strings.Contains(last[len(last)-1], "unknown field missing") || out != "" {
		t.Fatalf("exit %d, want 2 and the compiler's error in one line:\n%s\n%s", code, errs, out)
	}
}

// TestGradeNamesWhatHangs: a lock that cannot end its runs in virtual time gets one line that
// names its frame and the cause, never a stack trace or a silent hang. A sync.Mutex held from
// Lock to Unlock, waited for by a nested call of the same process, stops the bubble's clock: that
// cell is played again on the wall clock, and its note says why. A Lock deaf to its context leaves
// goroutines waiting after the run: those cells have no verdict, with the frame named.
func TestGradeNamesWhatHangs(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	for _, tc := range []struct {
		learner string
		want    []string
	}{
		{"mutex_across_wait", []string{"note: played on the wall clock, not in virtual time, where", "(*Locker).Lock at lock.go:", "sync.Mutex"}},
		{"deaf_wait", []string{"? no verdict on", "(*Locker).Lock at lock.go:", "still waiting to receive from a channel when the run had ended"}},
	} {
		t.Run(tc.learner, func(t *testing.T) {
			t.Parallel()
			code, out, errs := grade(t, sharedLearner(t, tc.learner))
			if code != 1 {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errs, w) {
					t.Errorf("the grade does not say %q:\n%s\n%s", w, out, errs)
				}
			}
			if regexp.MustCompile(`goroutine \d+ \[|panic:|\.go:\d+ \+0x`).MatchString(out + errs) {
				t.Errorf("a stack trace reached the learner:\n%s\n%s", out, errs)
			}
		})
	}
}

// TestGradeFlushDBOnAURLServer: a lock released with FLUSHDB, graded on a URL server that holds
// someone else's keys (with the server's default configuration), leaves those keys byte-identical:
// the guard refuses the command before it leaves, and the grade names it and gives no verdict
// where it struck. On the lab's own backend the same lock is judged: its FLUSHDB deletes whatever
// lock another buyer held (foreign-release under slow).
func TestGradeFlushDBOnAURLServer(t *testing.T) {
	t.Parallel() // grade builds and runs a binary of its own
	srv := needRedisServer(t)
	addr := srv.InventoryOptions().Addr
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		t.Fatal(err)
	}
	p := c.Pipeline()
	p.Set(ctx, "user:1", "alice", 0)
	p.HSet(ctx, "cart:9", "sku", "1001", "qty", "2")
	p.RPush(ctx, "queue:mail", "a", "b", "c")
	p.SAdd(ctx, "tags", "x", "y")
	p.Set(ctx, "session:abc", "token", time.Hour)
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	dump := func() map[string]string {
		out := map[string]string{}
		for _, k := range []string{"user:1", "cart:9", "queue:mail", "tags", "session:abc"} {
			out[k] = c.Dump(ctx, k).Val()
		}
		return out
	}
	before := dump()
	dir := sharedLearner(t, "flushdb_release")
	code, out, errs := grade(t, "-redis", "redis://"+addr+"/0", dir)
	if after := dump(); !maps.Equal(before, after) {
		t.Errorf("the user's keys changed under the grade: before %v, after %v", before, after)
	}
	if code != 1 || !strings.Contains(out, "refused FLUSHDB") {
		t.Errorf("exit %d; the grade should name the refused FLUSHDB:\n%s\n%s", code, out, errs)
	}
	code, out, errs = grade(t, dir)
	if code != 1 || !regexpLine(out, `^  slow +.*foreign-release`) {
		t.Errorf("exit %d; on the embedded backend its FLUSHDB should be judged a foreign release under slow:\n%s\n%s", code, out, errs)
	}
}

// TestGradeSaysWhatItCouldNotJudge: a graded row whose cells are mostly `?` is like a step only on
// the cells it judged, and the terminal and the page both say how many it could not; a row of
// nothing but `?` is like no step.
func TestGradeSaysWhatItCouldNotJudge(t *testing.T) {
	st, err := catalog.Find("04")
	if err != nil {
		t.Fatal(err)
	}
	var row []cell
	for i, sc := range scenario.Names() {
		c := cell{Step: "steps/mine", Scenario: string(sc), Violations: st.Expect[sc]}
		if i >= 3 {
			c.Violations, c.Unjudged, c.Why = nil, []steps.Kind{steps.Overlap}, "the fault found nowhere to strike"
		}
		row = append(row, c)
	}
	on := fmt.Sprintf("on the 3 of %d it judged; %d not judged", len(row), len(row)-3)
	var out bytes.Buffer
	printGrade(&out, "steps/mine", row)
	if !strings.Contains(out.String(), "\nYour lock's row is step 4's ("+st.Title+"), cell for cell "+on+".\n") {
		t.Errorf("lab grade of a row 3 cells of which were judged says\n%s\nwant it like step 4's %s", out.String(), on)
	}
	d := page.GradePage("steps/mine", row, "", nil, learner)
	if !strings.HasSuffix(d.Like, on+".") || len(d.Rows) < 2 || d.Rows[1].Step != st.Slug || d.Rows[1].Note != fmt.Sprintf("the same on the 3 cells judged; %d not judged", len(row)-3) {
		t.Errorf("the page of a row 3 cells of which were judged: like %q, its first step row %s %q", d.Like, d.Rows[1].Step, d.Rows[1].Note)
	}
	for i := range row[:3] {
		row[i].Violations, row[i].Unjudged = nil, []steps.Kind{steps.Overlap}
	}
	out.Reset()
	printGrade(&out, "steps/mine", row)
	if d := page.GradePage("steps/mine", row, "", nil, learner); strings.Contains(out.String(), "Your lock's row is") || d.Like != "" {
		t.Errorf("a row of nothing but '?' is like a step: %q\n%s", d.Like, out.String())
	}
}
