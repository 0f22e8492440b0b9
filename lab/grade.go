package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// Grading a learner's lock. The lab cannot import a package it has never heard of, and a learner
// should not have to edit the catalog to be graded. So "lab grade DIR" checks DIR's source
// (grading.Inspect), then builds the test binary of internal/matrix with one more file laid over
// it by go test -c -overlay: a file that imports DIR's package and hands its New and Order to
// that package's TestGrade. The test binary plays the learner's row as "lab matrix" plays a
// step's (matrix.Row), each cell of the embedded backend inside a testing/synctest bubble, so the
// grade is in virtual time: the same on a busy laptop as on an idle one. It writes the row as
// JSON; grade prints it. "lab -dir DIR" opens the terminal lab, which runs on the wall clock, the
// same way with the lab itself: the learner's lock is the picker's last line.

// childExit is the exit status of a lab built by grade, which has printed its own error already.
type childExit struct{ code int }

func (e *childExit) Error() string {
	return fmt.Sprintf("the lab built for grading exited with status %d", e.code)
}

// gradeFlags are grade's flags; -dir in the terminal lab takes -nodes too.
type gradeFlags struct {
	nodes   int
	backend string
	asJSON  bool
	html    string          // write the grade as a page to this file
	want    *grading.Target // the row the learner aims for (-want), or nil
	wantArg string          // -want as given, kept in a saved grade for lab class
	name    string          // the learner's name, for lab class (-name)
	save    string          // write the grade's runs to this file, for lab class and lab judge (-save)
	explore time.Duration   // wall time to explore the lock after its row at most (-explore; 0: not at all)
	progs   int             // the most programs that exploring plays (-programs; 0: as many as -explore allows)
}

// gradeExplores is how long grade explores after the scenarios at most, and gradePrograms how
// many programs, unless -explore and -programs say otherwise: a count, so that every laptop of a
// room finds the same (200 programs of a copy of 09: 6.6 s on this project's 2 cores, of 04:
// 0.6 s), and a wall-clock bound for a lock whose programs are slow.
const (
	gradeExplores = 30 * time.Second
	gradePrograms = 200
)

// gradeCmd grades the package in the folder its one argument names: every scenario, its row, a
// sentence per violation, the way on from each break, then what exploring it found; an error
// (exit 1) when anything was violated or not judged, by a scenario or an explored program — or,
// with -want, when the row is not the target's (exploring does not move that verdict).
func gradeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("grade", "lab grade [-want STEP] [-name NAME -save FILE] [-nodes 1] [-redis embedded] [-json] [-html FILE] [-explore 30s] [-programs 200] DIR\n\n"+
		"Grades the lock package in DIR (a folder inside this module, e.g. steps/mine: a copy of a step,\n"+
		"changed). It must export "+grading.WantNew+", and may export\n"+
		grading.WantOrder+" (without it, the lab's steps.DefaultOrder places the orders).\n"+
		"Every scenario is played against it as the matrix plays the steps, in virtual time on the\n"+
		"embedded backend; exit 0 when nothing was violated, 1 when something was, 2 on bad input.\n"+
		"With -want, exit 0 when the row is the target's, cell for cell, and 1 when it is not.\n"+
		"Then it explores the lock with 200 programs more (at most 30 s), as lab explore DIR does: random programs of faults,\n"+
		"beyond what the scenarios stage. A break is shrunk and said in words with the command that\n"+
		"replays it (and without -want, exit 1); -explore 0 skips it.", stderr)
	var f gradeFlags
	fs.IntVar(&f.nodes, "nodes", 1, "lock nodes each process gets (Proc.Nodes): 3 for a quorum lock such as step 15's")
	fs.StringVar(&f.backend, "redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	fs.BoolVar(&f.asJSON, "json", false, "print the row as matrix -json does, each violation with its sentence")
	fs.StringVar(&f.html, "html", "", "write the grade as one self-contained page to this file: your row beside the nearest steps' rows, each cell linked to its run's timeline")
	want := fs.String("want", "", "the row you aim for: a step (04), then any scenario=verdict where an exercise's row is not that step's (05,unlock-race=ok; a verdict is ok, ?, or kinds joined by +)")
	fs.StringVar(&f.name, "name", "", "your name, as lab class shows your row beside the others' (with -save or -html)")
	fs.StringVar(&f.save, "save", "", "write the grade (every cell's run, your name) to this file, for lab class and lab judge")
	fs.DurationVar(&f.explore, "explore", gradeExplores, "after the scenarios, explore the lock this long at most (wall time; random programs of faults, as lab explore plays them); 0: not at all")
	fs.IntVar(&f.progs, "programs", gradePrograms, "the most programs exploring plays (the same on every machine); 0: as many as -explore allows")
	dir, err := parseWithDir(fs, args)
	if err != nil {
		return err
	}
	if *want != "" {
		if f.want, err = grading.ParseTarget(catalog.Find, *want); err != nil {
			return err
		}
		f.wantArg = *want
	}
	if f.name != "" && f.save == "" && f.html == "" {
		return usageError("-name names a saved grade: give -save FILE (or -html FILE) too")
	}
	if f.nodes < 1 || f.nodes > 9 {
		return usageError("-nodes %d: want 1…9 lock nodes", f.nodes)
	}
	if f.explore < 0 {
		return usageError("-explore %v: want a duration, e.g. 30s, or 0 not to explore", f.explore)
	}
	if f.progs < 0 {
		return usageError("-programs %d: want a number of programs, or 0 for as many as -explore allows", f.progs)
	}
	if err := redisenv.CheckName(f.backend, redisenv.Options{Nodes: f.nodes}); err != nil {
		return usageError("%v", err)
	}
	p, err := inspectToBuild("grade", dir)
	if err != nil {
		return err
	}
	if p.ReadsNodes && f.nodes == 1 {
		fmt.Fprintf(stderr, "lab: note: %s reads Proc.Nodes; with -nodes 1 there is one lock node (-nodes 3 for a quorum)\n", p.Rel)
	}
	return gradeLearner(p, f, stdout, stderr)
}

// parseWithDir parses fs's flags before and after the one folder argument, as a learner types
// them either way round.
func parseWithDir(fs *flag.FlagSet, args []string) (string, error) {
	if err := parseFlags(fs, args); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		return "", usageError("grade needs the folder of your lock's package, e.g. lab grade steps/mine (see -h)")
	}
	dir := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil {
		return "", err
	}
	return dir, nil
}

// gradeLearner builds the grading test binary with p laid over it, runs it, and prints the row it
// wrote: a line per scenario, a sentence per violation, then the Markdown row to read beside the
// README's matrix (or the row as JSON). Ctrl-C, a SIGTERM or a hang-up stops the binary
// (stopSignals); either way the build is removed.
func gradeLearner(p *grading.Pkg, f gradeFlags, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	gr, err := buildGrader(ctx, p, f.nodes, stderr)
	if err != nil {
		return err
	}
	defer gr.close()
	backend := f.backend
	if backend == "" {
		backend = "embedded"
	}
	clock := "in virtual time"
	if !matrix.Virtual(f.backend) {
		clock = "on the wall clock"
	}
	if !f.asJSON {
		fmt.Fprintf(stderr, "lab: playing %d scenarios against %s on the %s backend (%s), %s…\n", len(scenario.Names()), p.Rel, backend, course.Count(f.nodes, "lock node", "lock nodes"), clock)
	}
	var g matrix.Graded
	failed, err := gr.run("TestGrade", []string{"LAB_REDIS=" + f.backend}, &g)
	switch {
	case err != nil:
		return err
	case g.Hung != "":
		return fmt.Errorf("%s: %s", p.Rel, g.Hung)
	case g.Err != "":
		return errors.New(g.Err)
	case failed != nil:
		return failed
	}
	played := time.Now()
	if f.save != "" {
		if err := saveGrade(f.save, f.name, f.wantArg, g, played); err != nil {
			return err
		}
	}
	err = printGraded(p.Rel, g, f.asJSON, stdout)
	if !f.asJSON {
		printShared(stdout, p.Shared)
	}
	w := stdout
	if f.asJSON {
		w = stderr // stdout is the row as JSON
	}
	var said gradeSaid // what the page says beside the row, as the terminal said it
	if f.want != nil {
		var b bytes.Buffer
		err = printTarget(io.MultiWriter(w, &b), p.Rel, f.want, g.Row)
		said.target = b.String()
	}
	err = exploreAfter(gr, p, f, g.Row, w, stderr, err, &said)
	if f.html != "" {
		if perr := writeGradePage(f.html, p.Rel, f.name, f.wantArg, g, played, p.Shared, said); perr != nil {
			return perr
		}
	}
	return err
}

// gradeSaid is what a grade says after its row, in the terminal's words, for its page: whether
// the row met its target, and what exploring found.
type gradeSaid struct{ target, explored string }

// exploreAfter explores the graded lock (unless -explore 0) and returns the grade's error: err,
// the row's, unless the row was clean and exploring broke the lock (or stopped short). What it
// prints goes to said.explored too.
func exploreAfter(gr *grader, p *grading.Pkg, f gradeFlags, row []cell, w, stderr io.Writer, err error, said *gradeSaid) error {
	if f.explore <= 0 {
		return err
	}
	var b bytes.Buffer
	defer func() { said.explored = strings.TrimSpace(b.String()) }()
	w = io.MultiWriter(w, &b)
	broke, xerr := exploreGraded(gr, p, f, row, w, stderr)
	var child *childExit
	switch {
	case errors.As(xerr, &child): // interrupted
		return xerr
	case (xerr != nil || broke != nil) && f.want == nil && err == nil: // the row was clean
		return cmp.Or(xerr, broke)
	case xerr != nil:
		fmt.Fprintf(w, "Exploring stopped: %s\n", unwrapUsage(xerr))
	}
	return err
}

// exploreGraded explores the lock grade has just graded, from seed 1 for f.progs programs at most f.explore, in the grader
// that graded it (one build for both), and prints to w what it found that the row did not show
// already (rowShows), as lab explore prints its map. broke is the news that breaks the lock, as
// lab explore returns it (a refusal after the lab's own node fault is no break); err why
// exploring stopped short. Hazard: the grader's context ending (Ctrl-C) is an err that is a
// childExit with status 130, to pass on.
func exploreGraded(gr *grader, p *grading.Pkg, f gradeFlags, row []cell, w, stderr io.Writer) (broke, err error) {
	fmt.Fprintf(w, "\nExploring %s more: random programs of faults, each in virtual time, as lab explore plays them (-explore 0 skips it)…\n", exploring(f))
	req := explore.Request{Seed: 1, Budget: f.explore, Programs: f.progs, Buyers: 3}
	res, err := runExplorer(gr, req, p.Rel, stderr)
	if err != nil {
		return nil, err
	}
	return printExplored(res, p.Rel, exploreFlags{seed: 1, buyers: 3, nodes: f.nodes}, func(fd *explore.Found) string { return rowShows(row, fd) }, w), nil
}

// exploring says how much a grade explores: "200 programs (at most 30s)", or "30s".
func exploring(f gradeFlags) string {
	if f.progs > 0 {
		return fmt.Sprintf("%d programs (at most %v)", f.progs, f.explore)
	}
	return f.explore.String()
}

// rowShows says how a grade's row showed fd already — its kind in the cell of a scenario that
// stages one of its program's faults ("overlap under restart") — or "" when it did not: a kind no
// cell shows, or one only a fault outside the cells that show it brings.
func rowShows(row []cell, fd *explore.Found) string {
	for _, sc := range fd.Program.Scenarios() {
		for _, c := range row {
			if c.Scenario == string(sc) && slices.Contains(c.Violations, fd.Kind) {
				return fmt.Sprintf("%s under %s", fd.Kind, sc)
			}
		}
	}
	return ""
}

// printTarget says whether row is the target's, cell for cell, and if not, each cell that is not
// with what clears it: an error (exit 1) when it is not.
func printTarget(w io.Writer, slug string, t *grading.Target, row []cell) error {
	misses := t.Misses(catalog.Steps, row)
	if len(misses) == 0 {
		fmt.Fprintf(w, "\nTarget met: your row is %s, cell for cell.\n", t)
		return nil
	}
	fmt.Fprintf(w, "\nTarget not met: %s of your row %s from %s:\n", course.Count(len(misses), "cell", "cells"), map[bool]string{true: "differs", false: "differ"}[len(misses) == 1], t)
	var under []string
	for _, m := range misses {
		fmt.Fprintf(w, "  %s: yours %s, the target's %s.", m.Scenario, m.Got, m.Want)
		if m.Fix != "" {
			fmt.Fprintf(w, " %s", m.Fix)
		}
		fmt.Fprintln(w)
		under = append(under, string(m.Scenario))
	}
	return fmt.Errorf("%s: not the target's row under %s", slug, strings.Join(under, ", "))
}

// testFailure is the line of a test binary's output that says why it failed: its first panic or
// failure message, or the exit error.
func testFailure(out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") || strings.Contains(l, ".go:") {
			return l
		}
	}
	if err != nil {
		return err.Error()
	}
	return "it wrote no row"
}

// printGraded prints a graded row and returns the grade as an error: violations (exit 1), cells
// without a verdict (exit 1), or nil.
func printGraded(slug string, g matrix.Graded, asJSON bool, stdout io.Writer) error {
	var broke []string
	for _, c := range g.Row {
		if len(c.Violations) > 0 {
			broke = append(broke, c.Scenario)
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(g.Row); err != nil {
			return err
		}
	} else {
		if why := failedByReplies(g); why != "" {
			fmt.Fprintf(stdout, "Every order of every scenario failed, the server refusing your lock's commands: %s.\n\n", why)
		}
		printGrade(stdout, slug, g.Row)
	}
	switch {
	case len(broke) > 0:
		return fmt.Errorf("%s violated %d of %d scenarios: %s", slug, len(broke), len(g.Row), strings.Join(broke, ", "))
	case g.Incomplete > 0:
		return fmt.Errorf("%s: %s no verdict", slug, course.Count(g.Incomplete, "scenario has", "scenarios have"))
	}
	return nil
}

// failedByReplies is the first error reply of a grade whose every played scenario failed every
// order while its commands got error replies (referee.Report.FailedByReplies), or "".
func failedByReplies(g matrix.Graded) string {
	why := ""
	for _, c := range g.Row {
		rep := g.Reports[c.Scenario]
		switch {
		case c.Skipped != "":
			continue
		case rep == nil || !rep.FailedByReplies:
			return ""
		case why == "":
			why = rep.Replies[0].String()
		}
	}
	return why
}

// printGrade writes a graded row in words.
func printGrade(w io.Writer, slug string, row []cell) {
	width := 0
	for _, sc := range scenario.Names() {
		width = max(width, len(sc))
	}
	fmt.Fprintf(w, "%s, every scenario (judged kinds in README.md's table of scenarios):\n", slug)
	for _, c := range row {
		v := "✓"
		switch {
		case c.Skipped != "":
			v = "skipped: " + c.Skipped
		case len(c.Unjudged) > 0:
			v = fmt.Sprintf("? no verdict on %s: %s", course.KindList(c.Unjudged), c.Why)
		case len(c.Violations) > 0:
			v = course.KindList(c.Violations)
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Scenario, v)
		for _, e := range c.Explain {
			fmt.Fprintf(w, "  %-*s    %s: %s\n", width, "", e.Kind, e.Sentence)
		}
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  %-*s    note: %s\n", width, "", n)
		}
	}
	fmt.Fprintf(w, "\nYour row of the matrix:\n\n%s", renderMatrix(row))
	if like := grading.Like(catalog.Steps, row, learner); like != "" {
		fmt.Fprintf(w, "\n%s\n", like)
	}
	if on := waysOn(row); len(on) > 0 {
		fmt.Fprintf(w, "\nThe way on, scenario by scenario:\n  %s\n", strings.Join(on, "\n  "))
	}
}

// waysOn is the way on under each scenario that broke the row: "slow: …" (grading.WayOn, the
// hand-off lab -dir says after a break), for the terminal and the page alike.
func waysOn(row []cell) []string {
	var on []string
	near := grading.Nearest(catalog.Steps, row, learner)
	for _, c := range row {
		if len(c.Violations) > 0 && c.Skipped == "" && len(c.Unjudged) == 0 {
			on = append(on, fmt.Sprintf("%s: %s", c.Scenario, grading.WayOn(catalog.Steps, steps.Scenario(c.Scenario), c.Violations, near)))
		}
	}
	return on
}

// printShared says, a line each, the learner's package-level state, which each buyer played on a
// copy of the package of its own, as in a deployment.
func printShared(w io.Writer, shared []grading.Shared) {
	for _, s := range shared {
		fmt.Fprintf(w, "\nNote: %s.\n", s.PerProcessSays())
	}
}
