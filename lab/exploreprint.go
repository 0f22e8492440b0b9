package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// What explore prints: the map of what broke the lock, the worst first, each kind with its
// smallest program in words and the command that plays it again; or how a program it was given
// played.

// printExplored prints what an exploration found and returns it as the command's error: a break
// (exit 1), two stories told by one program (-check: exit 3), or nil. shown, when not nil, says
// for a finding why it is no news (a grade's row showed it already: ""), and such findings are
// only counted.
func printExplored(res explore.Result, what string, f exploreFlags, shown func(*explore.Found) string, w io.Writer) error {
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	var news, safe []*explore.Found
	var old []string
	for _, fd := range res.Map {
		why := ""
		if shown != nil {
			why = shown(fd)
		}
		switch {
		case why != "":
			old = append(old, why)
		case fd.Safe != "":
			safe = append(safe, fd)
		default:
			news = append(news, fd)
		}
	}
	if !f.asJSON {
		printMap(w, res, what, f, news, safe, old)
	}
	if res.Differs != "" {
		return fmt.Errorf("%w: %s", errTwoStories, res.Differs)
	}
	if len(news) > 0 {
		return fmt.Errorf("%s: programs broke the lock (%s)", what, course.KindList(kindsOf(news)))
	}
	return nil
}

// printMap writes the map in words: a summary line, each new finding (grouped where kinds share
// their program), the refusals that were safe, and what the row showed already.
func printMap(w io.Writer, res explore.Result, what string, f exploreFlags, news, safe []*explore.Found, old []string) {
	rate := float64(res.Programs) / max(res.Wall.Seconds(), 1e-9)
	played := fmt.Sprintf("%d programs from seed %d (%v simulated, %v of wall time, %.0f programs/s)",
		res.Programs, res.Seed, res.Simulated.Round(time.Millisecond), res.Wall.Round(time.Millisecond), rate)
	switch {
	case len(news) == 0 && len(old) == 0:
		fmt.Fprintf(w, "%s: nothing broke the lock in %s", what, played)
	case len(news) == 0:
		fmt.Fprintf(w, "%s: nothing the scenarios did not show broke the lock in %s", what, played)
	default:
		fmt.Fprintf(w, "%s broke (%s) in %s; the worst first:\n", what, course.KindList(kindsOf(news)), played)
	}
	if len(news) == 0 {
		if res.NoVerdict > 0 {
			fmt.Fprintf(w, "; %d of them had no verdict", res.NoVerdict)
		}
		if res.WallClock > 0 {
			fmt.Fprintf(w, "; %d played on the wall clock, where the lock's sync.Mutex stopped virtual time", res.WallClock)
		}
		fmt.Fprintln(w)
	}
	for i := 0; i < len(news); {
		j := i + 1
		for j < len(news) && reflect.DeepEqual(news[j].Program, news[i].Program) {
			j++
		}
		printFinding(w, news[i:j], what, f, i == 0)
		i = j
	}
	for _, fd := range safe {
		fmt.Fprintf(w, "\nrefused safely, no break: %s in program %d: %s.\n", fd.Kind, fd.Nth, fd.Safe)
		printProgram(w, fd, "  ")
		fmt.Fprintf(w, "  replay: go run ./lab explore %s\n", inlineArgs(fd, what, f))
	}
	if len(old) > 0 {
		fmt.Fprintf(w, "\nAlso found, as the scenarios showed already: %s.\n", strings.Join(old, "; "))
	}
	if res.Checked > 0 && res.Differs == "" {
		fmt.Fprintf(w, "\ncheck: %s played twice more, each to the same history both times.\n", course.Count(res.Checked, "program", "programs"))
	}
	if res.Differs != "" {
		fmt.Fprintf(w, "\ncheck: %s\n", res.Differs)
	}
	if f.save != "" && len(news) > 0 {
		dir := "" // a program of a learner's lock plays in a lab built with it
		if _, err := catalog.Find(what); err != nil {
			dir = "-dir " + what + " "
		}
		fmt.Fprintf(w, "\nsaved: %s, the %s program (go run ./lab judge %s judges it again; go run ./lab %s-program %s plays it in the terminal lab)\n", f.save, news[0].Kind, f.save, dir, f.save)
	}
	if f.html != "" && len(news) > 0 {
		fmt.Fprintf(w, "page: %s\n", f.html)
	}
}

// printFinding writes findings whose kinds share one program: where it was found, the program
// in words, its verdict and how its quiet tail went, and the command that plays it again (the
// saved file's, for the worst, when -save wrote it).
func printFinding(w io.Writer, fds []*explore.Found, what string, f exploreFlags, worst bool) {
	fd := fds[0]
	ob, of := fd.Original.Size()
	nb, nf := fd.Program.Size()
	fmt.Fprintf(w, "\n%s: first in program %d (seed %d), ", course.KindList(kindsOf(fds)), fd.Nth, fd.Original.Seed)
	switch {
	case fd.Wall:
		fmt.Fprintf(w, "played on the wall clock (the lock's sync.Mutex stopped virtual time), so not shrunk:\n")
	default:
		fmt.Fprintf(w, "shrunk from %s and %s to %s and %s in %s:\n", course.Count(ob, "buyer", "buyers"), course.Count(of, "fault", "faults"),
			course.Count(nb, "buyer", "buyers"), course.Count(nf, "fault", "faults"), course.Count(fd.Shrink, "try", "tries"))
	}
	if fd.Original.Mix != nil {
		fmt.Fprintf(w, "  (the fault mix of seed %d: %s)\n", fd.Original.Seed, fd.Original.Mix)
	}
	printProgram(w, fd, "  ")
	replay := inlineArgs(fd, what, f)
	if worst && f.save != "" {
		replay = "-replay " + f.save
	}
	fmt.Fprintf(w, "  replay: go run ./lab explore %s\n", replay)
}

// printProgram writes fd's program in words, its verdict with the referee's sentences and notes,
// and how its quiet tail went, each line after indent.
func printProgram(w io.Writer, fd *explore.Found, indent string) {
	for _, l := range fd.Lines {
		fmt.Fprintf(w, "%s%s\n", indent, l)
	}
	rep := fd.Report
	if rep == nil {
		fmt.Fprintf(w, "%sno verdict: the program had no run\n", indent)
		return
	}
	fmt.Fprintf(w, "%sverdict: %s\n", indent, course.Verdict(rep.Violations, rep.Unjudged))
	for _, e := range rep.Explain {
		fmt.Fprintf(w, "%s  %s: %s\n", indent, e.Kind, e.Sentence)
		if fd.Recovery != nil && (e.Kind == "stuck" || e.Kind == "lost-sales") {
			fmt.Fprintf(w, "%s    after the faults: %s\n", indent, fd.Recovery)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "%s  note: %s\n", indent, n)
	}
}

// kindsOf is the kinds of fds, in their order.
func kindsOf(fds []*explore.Found) []steps.Kind {
	var out []steps.Kind
	for _, fd := range fds {
		out = append(out, fd.Kind)
	}
	return out
}

// replayLine is the command that plays fd's program again, the worst finding, for its page: the
// saved file's when -save wrote it, else the program itself, inline.
func replayLine(fd *explore.Found, what string, f exploreFlags) string {
	if f.save != "" {
		return "go run ./lab explore -replay " + f.save
	}
	return "go run ./lab explore " + inlineArgs(fd, what, f)
}

// inlineArgs are the arguments that play fd's program against what, the program inline as JSON.
func inlineArgs(fd *explore.Found, what string, f exploreFlags) string {
	p := fd.Program
	p.Seed, p.Mix = 0, nil
	b, _ := json.Marshal(p)
	s := fmt.Sprintf("-program '%s'", b)
	if f.nodes != 1 {
		s += fmt.Sprintf(" -nodes %d", f.nodes)
	}
	return s + " " + what
}

// savedFound is what explore -save writes: the found program's run as run -save writes one (lab
// judge reads it), and the program itself, as data.
type savedFound struct {
	savedRuns
	Program  explore.Program `json:"program"`
	Original explore.Program `json:"original"`
}

// saveFound writes fd's shrunk program and its run to file.
func saveFound(file string, fd *explore.Found) error {
	out := savedFound{savedRuns: savedOf([]*referee.Report{fd.Report}, time.Now()), Program: fd.Program, Original: fd.Original}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return fmt.Errorf("writing the found program: %w", err)
	}
	return nil
}

// givenProgram is a program explore was given to play (-replay, -program): where it came from.
type givenProgram struct {
	what    string          // in words, for the lab's line on stderr
	program explore.Program // what to play
	c       *explore.Case   // the case it is, if it is one
	step    string          // -replay: the lock it was found in
	saved   *savedRun       // -replay: its run as saved, with the verdict it earned
}

// readReplay reads the file explore -save wrote, for -replay.
func readReplay(file string) (*givenProgram, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError("-replay: %v", err)
	}
	var s savedFound
	if json.Unmarshal(b, &s) != nil || s.Lockstep != "runs" || len(s.Program.Buyers) == 0 || len(s.Runs) != 1 {
		return nil, usageError("-replay %s: not a program lab explore -save wrote", file)
	}
	return &givenProgram{what: "the program saved in " + file, program: s.Program, step: s.Runs[0].Step, saved: &s.Runs[0]}, nil
}

// readProgram reads -program: a case of cases/, a file explore -save wrote, a program as JSON in
// a file, or the JSON itself (it begins with {).
func readProgram(src string) (*givenProgram, error) {
	b, what := []byte(src), "the program given"
	if !strings.HasPrefix(strings.TrimSpace(src), "{") {
		var err error
		if b, err = os.ReadFile(src); err != nil {
			return nil, usageError("-program: %v", err)
		}
		what = "the program in " + src
	}
	if explore.IsCase(b) {
		var c explore.Case
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, usageError("-program %s: %v", src, err)
		}
		if err := checkProgram(c.Program); err != nil {
			return nil, usageError("-program %s: %v", src, err)
		}
		return &givenProgram{what: "case " + c.Heading(), program: c.Program, c: &c}, nil
	}
	var s savedFound
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, usageError("-program %s: not a program (%v)", src, err)
	}
	p := s.Program
	if s.Lockstep != "runs" {
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, usageError("-program %s: not a program (%v)", src, err)
		}
	}
	if err := checkProgram(p); err != nil {
		return nil, usageError("-program %s: %v", src, err)
	}
	return &givenProgram{what: what, program: p}, nil
}

// checkProgram says what is wrong with p as a program to play, or nil.
func checkProgram(p explore.Program) error {
	if len(p.Buyers) == 0 || p.Stock < 1 {
		return fmt.Errorf("a program needs a stock of at least 1 and a buyer")
	}
	for i, b := range p.Buyers {
		if len(b.Orders) == 0 {
			return fmt.Errorf("buyer %d has no order", i+1)
		}
		for _, o := range b.Orders {
			if o.Fault != "" && !slices.Contains(explore.OrderFaults, o.Fault) {
				return fmt.Errorf("buyer %d: no fault %q (want one of %s)", i+1, o.Fault, faultNames(explore.OrderFaults))
			}
		}
	}
	return nil
}

// printPlayed prints how the program explore was given played, and returns the command's error:
// a lock with a case's bug or broken by the program (exit 1), a replay whose verdict is not the
// saved one or a -check that saw two stories (exit 3), or nil.
func printPlayed(res explore.Result, what string, g *givenProgram, f exploreFlags, w io.Writer) error {
	if len(res.Played) != 1 {
		return fmt.Errorf("the explorer of %s played %d programs, not the one given", what, len(res.Played))
	}
	fd := res.Played[0]
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	var has bool
	var caseErr error
	if g.c != nil {
		has, caseErr = g.c.Has(fd.Report)
	}
	if !f.asJSON {
		if g.c != nil {
			fmt.Fprintf(w, "%s\n  %s\n", g.c.Heading(), g.c.Link)
			for _, l := range g.c.Story {
				fmt.Fprintf(w, "  %s\n", l)
			}
			fmt.Fprintf(w, "  played here: %s\n\n", g.c.Played)
		}
		if fd.Report != nil && g.c == nil {
			fmt.Fprint(w, fd.Report.Text())
			if fd.Recovery != nil {
				fmt.Fprintf(w, "  after the faults: %s\n", fd.Recovery)
			}
		} else {
			fmt.Fprintf(w, "%s, under %s:\n", what, g.what)
			printProgram(w, fd, "  ")
		}
		switch {
		case caseErr != nil:
			fmt.Fprintf(w, "\n%s: cannot tell whether it has the bug: %v\n", what, caseErr)
		case g.c != nil && has:
			fmt.Fprintf(w, "\n%s has the bug of %s (%s).\n", what, g.c.Name, g.c.BugWords())
		case g.c != nil:
			fmt.Fprintf(w, "\n%s does not have the bug of %s (no %s).\n", what, g.c.Name, g.c.BugWords())
		}
		if g.saved != nil && fd.Report != nil && !fd.Report.Differs(g.saved.Violations, g.saved.Unjudged) {
			fmt.Fprintf(w, "replayed: the verdict it was saved with, %s (lab judge says it too)\n", course.Verdict(g.saved.Violations, g.saved.Unjudged))
		}
		if res.Checked > 0 && res.Differs == "" {
			fmt.Fprintln(w, "check: played twice more, to the same history both times.")
		}
	}
	switch {
	case g.saved != nil && (fd.Report == nil || fd.Report.Differs(g.saved.Violations, g.saved.Unjudged)):
		got := "no run"
		if fd.Report != nil {
			got = course.Verdict(fd.Report.Violations, fd.Report.Unjudged)
		}
		return fmt.Errorf("%w: saved with %s, played again %s", errTwoStories, course.Verdict(g.saved.Violations, g.saved.Unjudged), got)
	case res.Differs != "":
		return fmt.Errorf("%w: %s", errTwoStories, res.Differs)
	case caseErr != nil:
		return fmt.Errorf("%s under case %s: %v", what, g.c.Name, caseErr)
	case g.c != nil && has:
		return fmt.Errorf("%s has the bug of %s", what, g.c.Name)
	case g.c == nil && fd.Kind != "":
		return fmt.Errorf("%s: the program broke the lock (%s)", what, course.KindList(fd.Report.Violations))
	}
	return nil
}
