package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// What the text says beside a documented command, checked where a machine can check it.

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
		return course.KindList(rep.Violations)
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
