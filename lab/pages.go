package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// The pages the commands write (-html): lab/page draws them; here is what each command gives it.

// writeJudgedPage writes the page of the runs judge read from file and judged again (cells, in
// the same order): a run's page for one, a matrix's for several. The page keeps the runs as they
// were read, with the verdicts they earned when played.
func writeJudgedPage(out, file string, runs []savedRun, cells []cell) error {
	played := map[string]string{}
	for i, c := range cells {
		played[page.RunID(c.Step, c.Scenario)] = runs[i].Played
	}
	var d page.Data
	if len(cells) == 1 {
		st, _ := catalog.Find(cells[0].Step)
		d = page.RunPage(cells[0], st, runs[0].Played, learner)
	} else {
		d = page.MatrixPage("runs judged again from "+filepath.Base(file), cells, func(c cell) string { return played[page.RunID(c.Step, c.Scenario)] }, learner)
	}
	return page.Write(out, d, savedRuns{Lockstep: "runs", Runs: runs})
}

// writeRunPage writes the page of one run of st, played at played, to out.
func writeRunPage(out string, st *steps.Step, rep *referee.Report, played time.Time) error {
	runs := savedOf([]*referee.Report{rep}, played)
	return page.Write(out, page.RunPage(matrix.CellOf(rep), st, played.UTC().Format(time.RFC3339), learner), runs)
}

// writeExplorePage writes the page of what explore found in st (nil: a learner's lock), played at
// played, to out: the shrunk program's run, and the program in words above its verdict.
func writeExplorePage(out string, st *steps.Step, fd *explore.Found, played time.Time, replay string) error {
	d, runs := storyPage(st, fd.Report, fd.Lines, played)
	d.Runs[0].Seed, d.Runs[0].Replay = fd.Original.Seed, replay
	return page.Write(out, d, runs)
}

// writeDrivePage writes the page of a drive session of st, played at played, to out: its run,
// and its moves in words above its verdict.
func writeDrivePage(out string, st *steps.Step, rep *referee.Report, story []string, played time.Time) error {
	d, runs := storyPage(st, rep, story, played)
	return page.Write(out, d, runs)
}

// storyPage is the page of one run of st that a story tells (a found program, a drive session's
// moves), played at played, the story in words above its verdict, and the run it carries.
func storyPage(st *steps.Step, rep *referee.Report, story []string, played time.Time) (page.Data, savedRuns) {
	runs := savedOf([]*referee.Report{rep}, played)
	d := page.RunPage(matrix.CellOf(rep), st, played.UTC().Format(time.RFC3339), learner)
	d.Runs[0].Story = story
	return d, runs
}

// writeMatrixPage writes the page of a played matrix of nSteps steps, played at played, to out.
func writeMatrixPage(out string, cells []cell, nSteps int, played time.Time) error {
	when := played.UTC().Format(time.RFC3339)
	d := page.MatrixPage(fmt.Sprintf("the matrix, %s × %d scenarios", course.Count(nSteps, "step", "steps"), len(scenario.Names())), cells, func(cell) string { return when }, learner)
	return page.Write(out, d, savedOf(cellReports(cells), played))
}

// writeGradePage writes the page of a learner's grade, played at played, to out: each cell of
// the row with the report the grader wrote for it (Graded.Reports). name is the learner's (-name),
// or "": lab class reads it back from the page's runs. shared is the learner's package-level state
// (grading.SharedState), which each buyer played on a copy of its own, said on the page.
func writeGradePage(out, slug, name, want string, g matrix.Graded, played time.Time, shared []grading.Shared, said gradeSaid) error {
	reps := gradeReports(g)
	when := played.UTC().Format(time.RFC3339)
	runs := savedOf(reps, played)
	runs.Name, runs.Want = name, want
	d := page.GradePage(slug, g.Row, when, shared, learner)
	d.Target, d.WayOn, d.Explored = strings.TrimSpace(said.target), waysOn(g.Row), said.explored
	return page.Write(out, d, runs)
}

// gradeReports sets each cell of g's row to the report the grader wrote for it
// (Graded.Reports), and returns those reports in the row's order.
func gradeReports(g matrix.Graded) []*referee.Report {
	var reps []*referee.Report
	for i, c := range g.Row {
		if rep := g.Reports[c.Scenario]; rep != nil {
			g.Row[i].Report = rep
			reps = append(reps, rep)
		}
	}
	return reps
}
