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

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// cell is one entry of the matrix, as -json prints it.
type cell = matrix.Cell

// playRow plays every scenario against st, one after the other, each on a fresh env of pl's
// backend (through pl, as run does), and returns its row of cells and how many of them have no
// verdict. A scenario the backend cannot stage is a skipped cell, not an error.
func playRow(pl *player, st *steps.Step) ([]cell, int, error) {
	ps, err := pl.cells(st, scenario.Names())
	if err != nil {
		return nil, 0, err
	}
	row, incomplete, err := matrix.Row(st, func(_ *steps.Step, sc steps.Scenario) (*referee.Report, error) {
		p := ps[slices.Index(scenario.Names(), sc)]
		return p.rep, p.err
	})
	var ce *matrix.CellError
	if errors.As(err, &ce) && errors.Is(err, errUsage) {
		return nil, 0, ce.Err // a bad backend name: one line, as the caller typed it
	}
	return row, incomplete, err
}

// matrixCmd plays every scenario against every step and prints the table.
func matrixCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("matrix", "lab matrix [-json] [-redis embedded] [-steps 04,05] [-save FILE] [-html FILE]", stderr)
	asJSON := fs.Bool("json", false, "print a JSON array of {step, scenario, violations}")
	backend := fs.String("redis", os.Getenv("LAB_REDIS"), "the Redis backend (default embedded; env LAB_REDIS)")
	only := fs.String("steps", "", "play only these steps, comma-separated (04,05 or atomic_ttl); default every step")
	expected := fs.Bool("expected", false, "print the matrix the tests expect (the catalog's), without playing it")
	save := fs.String("save", "", "write every cell's run (its history and verdict) to this file, for lab judge")
	html := fs.String("html", "", "write the table and every cell's run as one self-contained page to this file, each cell linked to its run's timeline")
	if err := parse(fs, args); err != nil {
		return err
	}
	rows := catalog.Steps
	if *only != "" {
		rows = nil
		for _, name := range strings.Split(*only, ",") {
			st, err := catalog.Find(strings.TrimSpace(name))
			if err != nil {
				return usageError("%v", err)
			}
			rows = append(rows, st)
		}
	}
	if *expected {
		var cells []cell
		for _, st := range rows {
			for _, sc := range scenario.Names() {
				c := cell{Step: st.Slug, Scenario: string(sc), Violations: st.Expect[sc]}
				if c.Violations == nil {
					c.Violations = []steps.Kind{}
				}
				cells = append(cells, c)
			}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(cells)
		}
		fmt.Fprint(stdout, renderMatrix(cells))
		return nil
	}
	pl, err := newPlayer(*backend, stderr)
	if err != nil {
		return err
	}
	defer pl.close()
	var cells []cell
	incomplete := 0
	for _, st := range rows {
		row, n, err := playRow(pl, st)
		if err != nil {
			return err
		}
		cells, incomplete = append(cells, row...), incomplete+n
		if !*asJSON {
			fmt.Fprint(stderr, ".")
		}
	}
	if *save != "" {
		if err := saveRuns(*save, cellReports(cells)); err != nil {
			return err
		}
	}
	if *html != "" {
		if err := writeMatrixPage(*html, cells, len(rows), time.Now()); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cells); err != nil {
			return err
		}
		if incomplete > 0 {
			return fmt.Errorf("%s no verdict", course.Count(incomplete, "cell has", "cells have"))
		}
		return nil
	}
	fmt.Fprintln(stderr)
	fmt.Fprint(stdout, renderMatrix(cells))
	for _, c := range cells {
		if len(c.Unjudged) > 0 {
			fmt.Fprintf(stdout, "? %s × %s: no verdict on %s: %s\n", c.Step, c.Scenario, course.KindList(c.Unjudged), c.Why)
		}
	}
	fmt.Fprint(stdout, skippedLines(cells, len(rows)))
	if incomplete > 0 {
		return fmt.Errorf("%s no verdict", course.Count(incomplete, "cell has", "cells have"))
	}
	return nil
}

// skippedLines says which cells were skipped and why, one line per reason in the order the
// reasons first came: the scenarios and the steps it covers ("every step", "every scenario").
func skippedLines(cells []cell, nSteps int) string {
	var whys []string
	scs, sts := map[string][]string{}, map[string][]string{}
	for _, c := range cells {
		if c.Skipped == "" {
			continue
		}
		if _, seen := scs[c.Skipped]; !seen {
			whys = append(whys, c.Skipped)
		}
		if !slices.Contains(scs[c.Skipped], c.Scenario) {
			scs[c.Skipped] = append(scs[c.Skipped], c.Scenario)
		}
		if !slices.Contains(sts[c.Skipped], c.Step) {
			sts[c.Skipped] = append(sts[c.Skipped], c.Step)
		}
	}
	var b strings.Builder
	for _, why := range whys {
		which, where := strings.Join(scs[why], ", "), strings.Join(sts[why], ", ")
		if len(scs[why]) == len(scenario.Names()) {
			which = "every scenario"
		}
		if len(sts[why]) == nSteps && nSteps > 1 {
			where = "every step"
		}
		fmt.Fprintf(&b, "skipped (%s; %s): %s\n", which, where, why)
	}
	return b.String()
}

// renderMatrix draws the table in Markdown, ✓ where no judged kind happened.
func renderMatrix(cells []cell) string {
	var b strings.Builder
	b.WriteString("| step |")
	for _, sc := range scenario.Names() {
		b.WriteString(" " + string(sc) + " |")
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(scenario.Names())))
	b.WriteString("\n")
	for i, c := range cells {
		if i%len(scenario.Names()) == 0 {
			b.WriteString("| " + c.Step + " |")
		}
		b.WriteString(" " + course.CellText(c) + " |")
		if i%len(scenario.Names()) == len(scenario.Names())-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}
