package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// runCmd plays one scenario against one step and prints the referee's report.
func runCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "lab run -step 04 -scenario slow [-json] [-redis embedded]", stderr)
	stepName := fs.String("step", "", "the step: a number (4 or 04), a slug (04_atomic_ttl) or a name (atomic_ttl)")
	scName := fs.String("scenario", "", "the scenario: "+scenarioList())
	asJSON := fs.Bool("json", false, "print the report as JSON")
	repeat := fs.Int("repeat", 1, "play the scenario this many times and say whether every verdict was the same")
	backend := fs.String("redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	save := fs.String("save", "", "write the run (its history and verdict) to this file, for lab judge")
	html := fs.String("html", "", "write the run as one self-contained page to this file: its verdict, lesson and timeline")
	events := fs.Bool("events", false, "print every event of the run in words, as the lab's log says them, before the report")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *stepName == "" || *scName == "" {
		return usageError("run needs -step and -scenario (see -h)")
	}
	if *repeat < 1 {
		return usageError("-repeat must be at least 1")
	}
	st, err := catalog.Find(*stepName)
	if err != nil {
		return usageError("%v", err)
	}
	sc, ok := scenario.ParseName(*scName)
	if !ok {
		return usageError("unknown scenario %q (want one of %s)", *scName, scenarioList())
	}
	if *repeat > 1 && *html != "" {
		return usageError("-html writes the page of one run: it does not go with -repeat")
	}
	pl, err := newPlayer(*backend, stderr)
	if err != nil {
		return err
	}
	defer pl.close()
	if *repeat > 1 {
		return repeatCmd(pl, st, sc, *repeat, *asJSON, stdout, stderr)
	}
	rep, err := runOnce(pl, st, sc)
	if err != nil {
		return err
	}
	if *save != "" {
		if err := saveRuns(*save, []*referee.Report{rep}); err != nil {
			return err
		}
	}
	if *html != "" {
		if err := writeRunPage(*html, st, rep, time.Now()); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		if *events {
			printEvents(stdout, rep)
		}
		fmt.Fprint(stdout, rep.Text())
		lesson, next := course.Coda(catalog.Steps, st, sc, rep.Violations, learner)
		if lesson != "" {
			fmt.Fprintf(stdout, "\nlesson: %s\n", lesson)
		}
		if next != "" {
			fmt.Fprintf(stdout, "\nnext: %s\n", next)
		}
	}
	if !rep.Complete() {
		return fmt.Errorf("no verdict on %s: %s", course.KindList(rep.Unjudged), rep.Why())
	}
	return nil
}

// printEvents prints the events of rep's play in words, as the referee reads its history again:
// the play drawn, and a heading per play where the scenario played several.
func printEvents(w io.Writer, rep *referee.Report) {
	plays := append([]*history.History{rep.History}, rep.Others...)
	for _, h := range plays {
		if len(plays) > 1 {
			fmt.Fprintf(w, "— play %d of %d —\n", h.Play, len(plays))
		}
		r := referee.NewReferee(*h, func(e referee.Event) { fmt.Fprintln(w, e) })
		for _, rec := range h.Records {
			r.Add(rec)
		}
	}
	fmt.Fprintln(w)
}

// play plays sc against st on a fresh env of backend, in this process: every cell a headless
// command plays here (run and matrix on the wall clock, or in a test's bubble; see player) plays
// through it, and the grader plays its own through matrix.Play too, so they judge alike. A bad
// backend name, or a topology the backend cannot give, is the caller's input (exit 2); a backend
// that cannot start is the machine's (exit 1); a scenario the backend cannot stage is arena.ErrCannotStage. It is a variable
// so that the documentation's test can play a cell once for every command that shows it; hazard:
// anything else that replaces it changes every verdict.
var play = func(st *steps.Step, sc steps.Scenario, backend string) (*referee.Report, error) {
	rep, err := matrix.Play(st, sc, backend, bubble)
	if errors.Is(err, redisenv.ErrBadName) || errors.Is(err, redisenv.ErrSingleNode) {
		return nil, usageError("%s: %w", st.Slug, err)
	}
	return rep, err
}

// bubble is nil in the lab: its headless commands play the embedded backend in virtual time in a
// built grader (player), and the other backends on the wall clock. The lab's tests set it to a
// testing/synctest bubble of their own, so that the cells they play on the embedded backend
// play in virtual time in the test's process, as the step suites do, with no grader to build.
var bubble matrix.Bubble

// runOnce plays sc against st on a fresh env of pl's backend.
func runOnce(pl *player, st *steps.Step, sc steps.Scenario) (*referee.Report, error) {
	ps, err := pl.cells(st, []steps.Scenario{sc})
	if err != nil {
		return nil, err
	}
	return ps[0].outcome()
}

// outcome is what run makes of a play: its report, or its error, where a scenario the backend
// cannot stage is bad input.
func (p played) outcome() (*referee.Report, error) {
	if errors.Is(p.err, arena.ErrCannotStage) {
		return nil, usageError("%s", p.err)
	}
	return p.rep, p.err
}

// repeatCmd plays one cell n times and says how many verdicts differed from the matrix's: the
// way to check that a staged interleaving holds on a loaded machine.
func repeatCmd(pl *player, st *steps.Step, sc steps.Scenario, n int, asJSON bool, stdout, stderr io.Writer) error {
	want := st.Expect[sc]
	if want == nil {
		want = []steps.Kind{}
	}
	type tally struct {
		Step       string         `json:"step"`
		Scenario   string         `json:"scenario"`
		Runs       int            `json:"runs"`
		Expected   []steps.Kind   `json:"expected"`
		Differ     int            `json:"differ"`
		Incomplete int            `json:"incomplete"`
		Verdicts   map[string]int `json:"verdicts"`
	}
	t := tally{Step: st.Slug, Scenario: string(sc), Runs: n, Expected: want, Verdicts: map[string]int{}}
	var plays []played // the plays of the current ten: a grader plays ten at a time
	for i := range n {
		if len(plays) == 0 {
			var err error
			if plays, err = pl.cells(st, slices.Repeat([]steps.Scenario{sc}, min(10-i%10, n-i))); err != nil {
				return err
			}
		}
		rep, err := plays[0].outcome()
		plays = plays[1:]
		if err != nil {
			return err
		}
		v := "✓"
		if len(rep.Violations) > 0 {
			v = course.KindList(rep.Violations)
		}
		if !rep.Complete() {
			t.Incomplete++
			v = "? " + rep.Why()
		} else if !slices.Equal(rep.Violations, want) {
			t.Differ++
		}
		t.Verdicts[v]++
		if !asJSON && (i+1)%10 == 0 {
			fmt.Fprint(stderr, ".")
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(t); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stderr)
		fmt.Fprintf(stdout, "step %s, scenario %s: %s, %d differ from the matrix (%s), %d without a verdict\n",
			st.Slug, sc, course.Count(n, "run", "runs"), t.Differ, orTick(course.KindList(want)), t.Incomplete)
		for v, k := range t.Verdicts {
			fmt.Fprintf(stdout, "  %4d × %s\n", k, v)
		}
	}
	if t.Differ > 0 || t.Incomplete > 0 {
		return fmt.Errorf("%d of %s of %s under %s differed from the matrix or had no verdict", t.Differ+t.Incomplete, course.Count(n, "run", "runs"), st.Slug, sc)
	}
	return nil
}

func orTick(s string) string {
	if s == "" {
		return "✓"
	}
	return s
}

func scenarioList() string {
	s := make([]string, len(scenario.Names()))
	for i, sc := range scenario.Names() {
		s[i] = string(sc)
	}
	return strings.Join(s, ", ")
}

// listCmd prints the steps' slugs, the scenarios' names or the kinds of violation, one per line,
// for scripts.
func listCmd(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return usageError("list needs one argument: steps, scenarios or kinds")
	}
	switch args[0] {
	case "steps":
		for _, st := range catalog.Steps {
			fmt.Fprintln(stdout, st.Slug)
		}
	case "scenarios":
		for _, sc := range scenario.Names() {
			fmt.Fprintln(stdout, sc)
		}
	case "kinds":
		for _, k := range steps.Kinds {
			fmt.Fprintln(stdout, k)
		}
	default:
		return usageError("list %q: want steps, scenarios or kinds", args[0])
	}
	return nil
}
