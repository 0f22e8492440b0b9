package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/lab/serve"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// A room's grades in one table: each learner saves a grade (lab grade -name NAME -save FILE, or
// the page lab grade -html writes), and the trainer's lab class reads every file, judges each run
// again from its history (offline, the same referee as lab judge), and prints every learner's row
// beside the catalog's rows nearest them.

// classRow is one learner's row, read from one file.
type classRow struct {
	name string // the learner's (-name), else the file's name without its extension
	slug string // the folder their lock was graded from: steps/mine
	file string
	row  []cell
	// differ are the cells judged again to another verdict than the one the file says they
	// earned when played.
	differ []string
	// want is the row the learner aimed for (lab grade -want, kept in the saved grade), nil if
	// none; misses are the cells of theirs that are not the target's.
	want   *grading.Target
	misses []grading.Miss
	like   string // the catalog's row theirs is, or is nearest: "step 4's row", "nearest step 4's row"
}

// met says whether r met its target: "met", "not met", or "" with no target.
func (r classRow) met() string {
	switch {
	case r.want == nil:
		return ""
	case len(r.misses) == 0:
		return "met"
	}
	return "not met"
}

// classCmd reads saved grades and prints one table of every learner's row beside the catalog's
// nearest rows: exit 0, or 1 when a saved verdict is not what its history is judged to again,
// or 2 on bad input (a file that is no grade).
func classCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("class", "lab class [-html FILE] GRADE|ROOM…\n\n"+
		"Puts a room's grades in one table: every learner's row beside the catalog's rows nearest\n"+
		"them. Each GRADE is a file lab grade -name NAME -save FILE wrote, or a page lab grade -html\n"+
		"wrote; every run in it is judged again from its history, offline. A ROOM is a file lab serve\n"+
		"-save kept: its learners are listed after the grades (step, faults pressed, breaks seen), each\n"+
		"beside their grade when one has their name (-html draws the grades only). Exit 0 when every\n"+
		"verdict is the one its run earned when played, 1 when one differs, 2 on bad input.", stderr)
	html := fs.String("html", "", "write the table as one self-contained page to this file")
	var files []string
	rest := args
	for {
		if err := parseFlags(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files, rest = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	if len(files) == 0 {
		return usageError("class needs the learners' saved grades: lab class alice.json bob.json (see -h)")
	}
	var rows []classRow
	var rooms []string
	for _, f := range files {
		if isRoom(f) {
			rooms = append(rooms, f)
			continue
		}
		r, err := readClassRow(f)
		if err != nil {
			return err
		}
		for _, o := range rows {
			if o.name == r.name {
				r.name += " (" + filepath.Base(f) + ")"
			}
		}
		if st, err := catalog.Find(r.name); err == nil && st.Slug == r.name {
			r.name += " (" + filepath.Base(f) + ")" // a row of its own, not the step's
		}
		for i := range r.row {
			r.row[i].Step = r.name // the table's rows are told apart by their cells' Step
		}
		rows = append(rows, r)
	}
	if *html != "" && len(rows) == 0 {
		return usageError("-html draws the grades, and %s holds none: lab class prints a room without -html", strings.Join(files, ", "))
	}
	if len(rows) > 0 {
		cells, words := classTable(rows)
		fmt.Fprint(stdout, renderMatrix(cells))
		fmt.Fprintln(stdout)
		for _, w := range words {
			fmt.Fprintln(stdout, w)
		}
		if *html != "" {
			if err := page.Write(*html, classPage(rows, cells), savedRuns{Lockstep: "runs"}); err != nil {
				return err
			}
		}
	}
	for _, f := range rooms {
		if err := printRoom(stdout, f, rows); err != nil {
			return err
		}
	}
	var differ []string
	for _, r := range rows {
		for _, d := range r.differ {
			differ = append(differ, r.name+": "+d)
		}
	}
	if len(differ) > 0 {
		for _, d := range differ {
			fmt.Fprintf(stdout, "differs: %s\n", d)
		}
		return fmt.Errorf("%s judged again to another verdict than the saved one", course.Count(len(differ), "cell was", "cells were"))
	}
	return nil
}

// readClassRow reads one learner's grade from file and judges each of its runs again. A file
// of runs of more than one lock (lab matrix -save) is no grade: bad input.
func readClassRow(file string) (classRow, error) {
	s, err := readSaved(file)
	if err != nil {
		return classRow{}, err
	}
	r := classRow{name: s.Name, file: file}
	if s.Want != "" {
		if r.want, err = grading.ParseTarget(catalog.Find, s.Want); err != nil {
			return classRow{}, usageError("%s: its target %q: %v", file, s.Want, unwrapUsage(err))
		}
	}
	if r.name == "" {
		r.name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	for _, run := range s.Runs {
		if r.slug == "" {
			r.slug = run.Step
		}
		if run.Step != r.slug {
			return classRow{}, usageError("%s holds runs of %s and of %s: a grade holds one lock's (lab grade -save)", file, r.slug, run.Step)
		}
	}
	byScenario := map[string]savedRun{}
	for _, run := range s.Runs {
		if run.History == nil {
			return classRow{}, usageError("%s: the run under %s has no history", file, run.Scenario)
		}
		if _, dup := byScenario[run.Scenario]; !dup {
			byScenario[run.Scenario] = run
		}
	}
	if len(byScenario) == 0 {
		return classRow{}, usageError("%s holds no run: save a grade with lab grade -name NAME -save FILE", file)
	}
	for _, sc := range scenario.Names() {
		run, ok := byScenario[string(sc)]
		if !ok {
			r.row = append(r.row, cell{Scenario: string(sc), Skipped: "not in " + filepath.Base(file)})
			continue
		}
		rep := referee.JudgeCell(run.History, run.Others)
		c := cell{Scenario: string(sc), Violations: rep.Violations, Explain: rep.Explain, Notes: rep.Notes}
		if !rep.Complete() {
			c.Unjudged, c.Why = rep.Unjudged, rep.Why()
		}
		if rep.Differs(run.Violations, run.Unjudged) {
			r.differ = append(r.differ, fmt.Sprintf("%s: played %s, judged again %s", sc, course.Verdict(run.Violations, run.Unjudged), course.Verdict(rep.Violations, rep.Unjudged)))
		}
		r.row = append(r.row, c)
	}
	if r.want != nil {
		r.misses = r.want.Misses(catalog.Steps, r.row)
	}
	return r, nil
}

// classTable is the class's table, cell by cell as renderMatrix takes them: every learner's row,
// then the catalog's rows nearest any of them, in the catalog's order; and a sentence per learner
// saying which step their row is, or is nearest, and where it differs.
func classTable(rows []classRow) (cells []cell, words []string) {
	var near []*steps.Step
	for i, r := range rows {
		cells = append(cells, r.row...)
		all := grading.NearestRows(catalog.Steps, r.row)
		if len(all) == 0 {
			continue
		}
		best := all[0]
		for _, n := range all {
			if len(n.Diff) == len(best.Diff) && !slices.Contains(near, n.Step) {
				near = append(near, n.Step)
			}
		}
		w := fmt.Sprintf("%s (%s): ", r.name, r.slug)
		rows[i].like = fmt.Sprintf("nearest %s's row", course.Name(best.Step))
		if len(best.Diff) == 0 {
			rows[i].like = fmt.Sprintf("%s's row", course.Name(best.Step))
			w += fmt.Sprintf("%s's row (%s)", course.Name(best.Step), best.Step.Title)
		} else {
			w += fmt.Sprintf("nearest %s's row (%s), but under %s", course.Name(best.Step), best.Step.Title, strings.Join(best.Diff, ", "))
		}
		var none []string
		for _, c := range r.row {
			if c.Skipped != "" || len(c.Unjudged) > 0 {
				none = append(none, c.Scenario)
			}
		}
		if len(none) > 0 {
			w += "; no verdict under " + strings.Join(none, ", ")
		}
		switch r.met() {
		case "met":
			w += fmt.Sprintf(". Target met: %s", r.want)
		case "not met":
			var under []string
			for _, m := range r.misses {
				under = append(under, fmt.Sprintf("%s (%s, not %s)", m.Scenario, m.Got, m.Want))
			}
			w += fmt.Sprintf(". Target not met: %s, but under %s", r.want, strings.Join(under, ", "))
		}
		words = append(words, w+".")
	}
	for _, st := range catalog.Steps {
		if !slices.Contains(near, st) {
			continue
		}
		for _, sc := range scenario.Names() {
			cells = append(cells, cell{Step: st.Slug, Scenario: string(sc), Violations: st.Expect[sc]})
		}
	}
	return cells, words
}

// classPage is the page of the class's table: the learners' rows marked as theirs, each with the
// folder it was graded from, then the catalog's nearest rows.
func classPage(rows []classRow, cells []cell) page.Data {
	d := page.MatrixPage(fmt.Sprintf("the class, %s", course.Count(len(rows), "learner", "learners")), cells, func(cell) string { return "" }, learner)
	d.Kind = "class"
	var targets []string
	for i, r := range rows {
		d.Rows[i].Mine, d.Rows[i].Note, d.Rows[i].Met = true, r.slug, r.met()
		// a cell that is not the target's, or with no target, not the nearest row's
		var differ []string
		for _, m := range r.misses {
			differ = append(differ, string(m.Scenario))
		}
		if near := grading.NearestRows(catalog.Steps, r.row); r.want == nil && len(near) > 0 {
			differ = near[0].Diff
		}
		for j, sc := range d.Scenarios {
			d.Rows[i].Cells[j].Differs = slices.Contains(differ, sc)
		}
		if r.want != nil {
			targets = append(targets, fmt.Sprintf("%s, aiming for %s: %s", r.name, r.want, r.met()))
		}
	}
	d.Target = strings.Join(targets, "\n")
	for i := len(rows); i < len(d.Rows); i++ {
		d.Rows[i].Note = "the catalog's row"
	}
	return d
}

// isRoom tells whether file is a room lab serve -save kept (and not a grade).
func isRoom(file string) bool {
	b, err := os.ReadFile(file)
	return err == nil && serve.IsRoomFile(b)
}

// printRoom prints the room kept in file: every learner who came, the step they were on, the
// last fault key they pressed and the breaks they saw, each beside the grade of their name
// among rows, if there is one.
func printRoom(w io.Writer, file string, rows []classRow) error {
	f, err := serve.ReadFile(file)
	if err != nil {
		return usageError("%v", err)
	}
	fmt.Fprintf(w, "\nThe room in %s (saved %s): %s\n", file, f.Saved.Local().Format("2006-01-02 15:04"), course.Count(len(f.Learners), "learner", "learners"))
	graded := func(name string) string {
		for _, r := range rows {
			if r.name == name {
				return filepath.Base(r.file) + ": " + r.like
			}
		}
		return "–"
	}
	if len(rows) == 0 {
		graded = nil
	}
	for _, l := range serve.Table(*f, f.Saved, 200, false, graded) {
		fmt.Fprintln(w, l)
	}
	return nil
}
