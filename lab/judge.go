package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/page"
	"github.com/lockstep-lab/lockstep/steps"
)

// A run is data: run -save and matrix -save write each cell's history (and, for unlock-race,
// its other plays') to a file, with the verdict it earned; judge reads such a file — or a
// report run -json printed, or a bare history — and judges every run again, offline, with the
// same referee: a trainer can grade homework from files.

// savedRuns is the file -save writes and judge reads.
type savedRuns struct {
	Lockstep string `json:"lockstep"` // "runs": what the file is
	// Name is whose lock the runs played, for lab class: lab grade -name; "" when not given.
	Name string `json:"name,omitempty"`
	// Want is the row the learner aimed for, as lab grade -want was given it ("" none): lab class
	// says whether the grade met it.
	Want string     `json:"want,omitempty"`
	Runs []savedRun `json:"runs"`
}

// savedRun is one cell: where it was played, the verdict it earned, and its history.
type savedRun struct {
	Step       string             `json:"step"`
	Scenario   string             `json:"scenario"`
	Backend    string             `json:"backend"`
	Violations []steps.Kind       `json:"violations"`
	Unjudged   []steps.Kind       `json:"unjudged,omitempty"`
	History    *history.History   `json:"history"`
	Others     []*history.History `json:"others,omitempty"`
	// Played is when the run was played (RFC 3339, UTC); "" in a file written before it was kept.
	Played string `json:"played,omitempty"`
}

// saveRuns writes the reports' runs to file.
func saveRuns(file string, reps []*referee.Report) error {
	return writeRuns(file, savedOf(reps, time.Now()))
}

// saveGrade writes a learner's grade to file as the runs of its cells, with the learner's name:
// lab class reads it beside the others', lab judge judges it again.
func saveGrade(file, name, want string, g matrix.Graded, played time.Time) error {
	out := savedOf(gradeReports(g), played)
	out.Name, out.Want = name, want
	return writeRuns(file, out)
}

// writeRuns writes out to file as JSON.
func writeRuns(file string, out savedRuns) error {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(out); err != nil {
		return err
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the runs: %w", err)
	}
	return nil
}

// savedOf is the reports' runs as -save writes them, played at played; a report without a
// history (a cell that could not end) has no run to save.
func savedOf(reps []*referee.Report, played time.Time) savedRuns {
	out := savedRuns{Lockstep: "runs"}
	for _, r := range reps {
		if r == nil || r.History == nil {
			continue
		}
		out.Runs = append(out.Runs, savedRun{Step: r.Step, Scenario: r.Scenario, Backend: r.Backend,
			Violations: r.Violations, Unjudged: r.Unjudged, History: r.History, Others: r.Others,
			Played: played.UTC().Format(time.RFC3339)})
	}
	return out
}

// cellReports is the reports of cells that were played.
func cellReports(cells []cell) []*referee.Report {
	var out []*referee.Report
	for _, c := range cells {
		if c.Report != nil {
			out = append(out, c.Report)
		}
	}
	return out
}

// readRuns reads a file of runs: what -save wrote, a report run -json printed, or a bare
// history, each history in any format (history.Version). Anything else is bad input, in one line.
func readRuns(file string) ([]savedRun, error) {
	s, err := readSaved(file)
	return s.Runs, err
}

// readSaved reads a file of runs as readRuns does, with the name it was saved under.
func readSaved(file string) (savedRuns, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return savedRuns{}, usageError("%v", err)
	}
	if page.IsPage(b) { // a page run, matrix, grade or judge wrote with -html carries its runs
		if b, err = page.RunsOf(b); err != nil {
			return savedRuns{}, usageError("%s: %v", file, err)
		}
	}
	var probe struct {
		Lockstep string          `json:"lockstep"`
		History  json.RawMessage `json:"history"`
		Records  json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return savedRuns{}, usageError("%s is not a saved run: %v", file, err)
	}
	switch {
	case probe.Lockstep == "runs":
		var s savedRuns
		if err := json.Unmarshal(b, &s); err != nil {
			return savedRuns{}, usageError("%s: %v", file, err)
		}
		return s, nil
	case probe.History != nil:
		var rep referee.Report
		if err := json.Unmarshal(b, &rep); err != nil || rep.History == nil {
			return savedRuns{}, usageError("%s: not a report with its history (lab run -json)", file)
		}
		return savedRuns{Lockstep: "runs", Runs: []savedRun{{Step: rep.Step, Scenario: rep.Scenario, Backend: rep.Backend, Violations: rep.Violations,
			Unjudged: rep.Unjudged, History: rep.History, Others: rep.Others}}}, nil
	case probe.Records != nil:
		h, err := history.ReadHistory(bytes.NewReader(b))
		if err != nil {
			return savedRuns{}, usageError("%s: %v", file, err)
		}
		return savedRuns{Lockstep: "runs", Runs: []savedRun{{Step: h.Step, Scenario: string(h.Scenario), Backend: h.Backend, History: h}}}, nil
	}
	return savedRuns{}, usageError("%s is not a saved run (lab run -save, lab matrix -save, lab run -json)", file)
}

// judgeCmd judges every run of a saved file again, offline, and says whether each verdict is the
// one it earned when it was played.
func judgeCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("judge", "lab judge [-json] [-html OUT] FILE\n\n"+
		"Judges again every run saved in FILE (lab run -save, lab matrix -save, lab run -json's\n"+
		"report, or a page -html wrote), offline, from the history alone: the same referee, no Redis. Exit 0 when every\n"+
		"verdict is the one the run earned when it was played, 1 when one differs or has none, 2 on\n"+
		"bad input.", stderr)
	asJSON := fs.Bool("json", false, "print the verdicts as matrix -json does")
	html := fs.String("html", "", "write the runs, judged again, as one self-contained page to this file (a run's page, or a matrix's)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("judge needs one file: lab judge runs.json (see -h)")
	}
	file := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil { // flags after the file, as a learner types them
		return err
	}
	runs, err := readRuns(file)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		return usageError("%s holds no run", file)
	}
	var cells []cell
	var differ, incomplete []string
	for _, r := range runs {
		if r.History == nil {
			return usageError("%s: a run of %s under %s has no history", file, r.Step, r.Scenario)
		}
		rep := referee.JudgeCell(r.History, r.Others)
		c := cell{Step: r.Step, Scenario: r.Scenario, Violations: rep.Violations, Explain: rep.Explain, Notes: rep.Notes, Report: rep}
		if !rep.Complete() {
			c.Unjudged, c.Why = rep.Unjudged, rep.Why()
			incomplete = append(incomplete, r.Step+" × "+r.Scenario)
		}
		if rep.Differs(r.Violations, r.Unjudged) {
			differ = append(differ, fmt.Sprintf("%s × %s: played %s, judged again %s", r.Step, r.Scenario, course.Verdict(r.Violations, r.Unjudged), course.Verdict(rep.Violations, rep.Unjudged)))
		}
		cells = append(cells, c)
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cells); err != nil {
			return err
		}
	case len(cells) == 1:
		fmt.Fprint(stdout, cells[0].Report.Text())
	default:
		fmt.Fprint(stdout, renderMatrix(cells))
	}
	for _, d := range differ {
		fmt.Fprintf(stdout, "differs: %s\n", d)
	}
	if *html != "" {
		if err := writeJudgedPage(*html, file, runs, cells); err != nil {
			return err
		}
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "%s judged again from their histories: %d as when played, %d differ, %d without a verdict\n",
			course.Count(len(cells), "run", "runs"), len(cells)-len(differ), len(differ), len(incomplete))
	}
	switch {
	case len(differ) > 0:
		return fmt.Errorf("%d of %s judged again %s from the verdict when played", len(differ), course.Count(len(cells), "run", "runs"), map[bool]string{true: "differs", false: "differ"}[len(differ) == 1])
	case len(incomplete) > 0:
		return fmt.Errorf("%s no verdict", course.Count(len(incomplete), "run has", "runs have"))
	}
	return nil
}
