package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/muesli/termenv"
)

// Exploring a lock. The lab's scenarios break a lock in the ways someone wrote down; "lab explore"
// looks for the others, as TigerBeetle's VOPR does: in the grader (internal/matrix's test binary,
// with a learner's package laid over it as grade lays it), whose TestExplore plays random programs
// of the arena's moves from a seed, each in virtual time, until one breaks the lock, and shrinks
// it. The binary writes what it found as JSON (explore.Result); explore prints it as a short story
// with the referee's sentences and the command that replays it.

// exploreFlags are explore's flags.
type exploreFlags struct {
	seed   uint64
	budget time.Duration
	buyers int
	nodes  int
	asJSON bool
	save   string
	html   string
	faults string
	kinds  string
}

// exploreCmd explores the step or the learner's folder its one argument names: exit 1 with the
// shrunk program when a program broke the lock, 0 when none did within the budget, 2 on bad input.
func exploreCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("explore", "lab explore [-seed 1] [-budget 60s] [-buyers 3] [-faults LIST] [-kinds LIST] [-nodes 1] [-json] [-save FILE] [-html FILE] STEP|DIR\n\n"+
		"Plays random programs against a step of the catalog (04, 13_pubsub…) or your lock's package in DIR:\n"+
		"a few buyers with random orders, work and waits, and the lab's faults at points defined by what a\n"+
		"process did, each program in virtual time on the embedded backend and judged for every kind. The\n"+
		"first program that breaks the lock is shrunk to the smallest that breaks it the same way and\n"+
		"printed with the command that replays it: exit 1. Nothing found within the budget: exit 0.\n"+
		"The same seed plays the same programs.", stderr)
	var f exploreFlags
	fs.Uint64Var(&f.seed, "seed", 1, "the first program's seed (program i is seed+i)")
	fs.DurationVar(&f.budget, "budget", 60*time.Second, "wall time for playing programs (the build and shrinking come on top)")
	fs.IntVar(&f.buyers, "buyers", 3, "the most buyers a program has (1…8)")
	fs.IntVar(&f.nodes, "nodes", 1, "lock nodes each process gets, for DIR (Proc.Nodes): 3 for a quorum lock")
	fs.StringVar(&f.faults, "faults", "", "the faults a program may arm, comma-separated (default every one: "+faultNames(explore.Faults)+"); \"none\" for none")
	fs.StringVar(&f.kinds, "kinds", "", "the kinds a program is judged for, comma-separated (default every kind: "+course.KindList(steps.Kinds)+")")
	fs.BoolVar(&f.asJSON, "json", false, "print what was found as JSON (explore.Result), for machines")
	fs.StringVar(&f.save, "save", "", "write the found program and its run to this file (lab judge reads it)")
	fs.StringVar(&f.html, "html", "", "write the found program's run as one self-contained page to this file: the program in words, its verdict and timeline")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError("explore needs a step (e.g. 04) or your lock's folder (e.g. steps/mine) (see -h)")
	}
	target := fs.Arg(0)
	if err := parse(fs, fs.Args()[1:]); err != nil { // flags after the argument, as a learner types them
		return err
	}
	nodesSet := false
	fs.Visit(func(fl *flag.Flag) { nodesSet = nodesSet || fl.Name == "nodes" })
	switch {
	case f.budget <= 0:
		return usageError("-budget %v: want a positive duration, e.g. 60s", f.budget)
	case f.buyers < 1 || f.buyers > 8:
		return usageError("-buyers %d: want 1…8", f.buyers)
	case f.nodes < 1 || f.nodes > 9:
		return usageError("-nodes %d: want 1…9 lock nodes", f.nodes)
	}
	req := explore.Request{Seed: f.seed, Budget: f.budget, Buyers: f.buyers}
	if f.faults != "" {
		faults, err := parseFaults(f.faults)
		if err != nil {
			return err
		}
		req.Faults = faults
	}
	if f.kinds != "" {
		for _, name := range strings.Split(f.kinds, ",") {
			k := steps.Kind(strings.TrimSpace(name))
			if !slices.Contains(steps.Kinds, k) {
				return usageError("-kinds: no kind %q (want some of %s)", name, course.KindList(steps.Kinds))
			}
			req.Kinds = append(req.Kinds, k)
		}
	}
	var p *grading.Pkg
	if st, err := catalog.Find(target); err == nil {
		if nodesSet {
			return usageError("-nodes goes with your lock's folder: %s takes %s", st.Slug, course.Count(max(st.Nodes, 1), "lock node", "lock nodes"))
		}
		req.Step = st.Slug
	} else if _, statErr := os.Stat(target); statErr != nil {
		return usageError("%v, and no folder %s", err, target)
	} else if p, err = inspectToBuild("explore of your lock's folder", target); err != nil {
		return err
	}
	return exploreRun(req, p, f, stdout, stderr)
}

// exploreRun explores in the grader (built with p laid over it, when exploring a learner's
// package; the packed one of a downloaded lab, or one built from source, for a step), and prints
// what it found. Ctrl-C, a SIGTERM or a hang-up stops it (stopSignals); either way the build is
// removed.
func exploreRun(req explore.Request, p *grading.Pkg, f exploreFlags, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	what := req.Step
	if p != nil {
		what = p.Rel
	}
	gr, err := buildGrader(ctx, p, f.nodes, stderr)
	if err != nil {
		return err
	}
	defer gr.close()
	fmt.Fprintf(stderr, "lab: exploring %s from seed %d for %v, in virtual time…\n", what, req.Seed, req.Budget)
	res, err := runExplorer(gr, req, what, stderr)
	if err != nil {
		return err
	}
	if f.save != "" && res.Found != nil {
		if err := saveFound(f.save, res.Found); err != nil {
			return err
		}
	}
	if f.html != "" && res.Found != nil {
		var st *steps.Step // nil for a learner's lock
		if req.Step != "" {
			st, _ = catalog.Find(req.Step)
		}
		replay := "go run ./lab explore " + replayArgs(what, res.Found.Original.Seed, f)
		if err := writeExplorePage(f.html, st, res.Found, time.Now(), replay); err != nil {
			return err
		}
	}
	return printExplored(res, what, f, stdout)
}

// runExplorer runs TestExplore (explore.Serve) for req in gr; the Result goes through a file of
// gr's. On a terminal, one line of stderr keeps up with its progress. what names the lock in an
// error. gr's context ending (Ctrl-C, a SIGTERM) stops the binary: a childExit with status 130.
func runExplorer(gr *grader, req explore.Request, what string, stderr io.Writer) (explore.Result, error) {
	var res explore.Result
	req.Out = filepath.Join(gr.tmp, "found.json")
	os.Remove(req.Out) // a file an earlier run wrote is not this run's
	env, err := json.Marshal(req)
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(gr.ctx, gr.bin, "-test.run=^TestExplore$", "-test.count=1", "-test.timeout=0")
	cmd.Dir = gr.tmp
	cmd.Env = append(os.Environ(), explore.Env+"="+string(env))
	cmd.Cancel = grading.Cancel(cmd, syscall.SIGTERM)
	cmd.WaitDelay = 30 * time.Second
	var log bytes.Buffer
	cmd.Stdout = &log
	progress, err := cmd.StderrPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, err
	}
	showProgress(progress, &log, stderr)
	runErr := cmd.Wait()
	if gr.ctx.Err() != nil {
		return res, &childExit{code: 130}
	}
	b, err := os.ReadFile(req.Out)
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	switch {
	case err == nil && res.Err != "":
		return res, fmt.Errorf("%s: %s", what, res.Err)
	case err != nil:
		// What it wrote is the answer: a bubble it left behind may still fail the binary after.
		return res, fmt.Errorf("exploring %s in %s failed: %s", what, gr.what, grading.FirstOfLines(strings.TrimSpace(testFailure(log.String(), runErr))))
	}
	return res, nil
}

// showProgress reads the explorer's progress (a JSON line each) and, on a terminal, keeps one line
// of stderr up to date with it; what is not progress goes to log.
func showProgress(r io.Reader, log io.Writer, stderr io.Writer) {
	tty := false
	if f, ok := stderr.(*os.File); ok {
		fi, err := f.Stat()
		tty = err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
	if tty { // Windows' console reads \033[K only with its virtual terminal processing on (elsewhere a no-op)
		if restore, err := termenv.EnableVirtualTerminalProcessing(termenv.NewOutput(stderr)); err == nil {
			defer restore()
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	last, shown := time.Time{}, false
	for sc.Scan() {
		var p explore.Progress
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			fmt.Fprintln(log, sc.Text())
			continue
		}
		if !tty || (time.Since(last) < 100*time.Millisecond && p.Shrinking == "") {
			continue
		}
		last, shown = time.Now(), true
		line := fmt.Sprintf("%d programs, %v simulated, %v", p.Programs, p.Simulated.Round(time.Millisecond), p.Wall.Round(100*time.Millisecond))
		if p.Shrinking != "" {
			line += "; broke it, shrinking: " + p.Shrinking
		}
		fmt.Fprintf(stderr, "\r\033[K%s", line)
	}
	if shown {
		fmt.Fprint(stderr, "\r\033[K")
	}
}

// printExplored prints what an exploration found, and returns it as the command's error: a break
// (exit 1), or nil.
func printExplored(res explore.Result, what string, f exploreFlags, stdout io.Writer) error {
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	rate := float64(res.Programs) / max(res.Wall.Seconds(), 1e-9)
	if res.Found == nil {
		if !f.asJSON {
			fmt.Fprintf(stdout, "%s: nothing broke the lock in %d programs (%v simulated, %v of wall time, %.0f programs/s) from seed %d",
				what, res.Programs, res.Simulated.Round(time.Millisecond), res.Wall.Round(time.Millisecond), rate, res.Seed)
			if res.NoVerdict > 0 {
				fmt.Fprintf(stdout, "; %d of them had no verdict", res.NoVerdict)
			}
			if res.WallClock > 0 {
				fmt.Fprintf(stdout, "; %d played on the wall clock, where the lock's sync.Mutex stopped virtual time", res.WallClock)
			}
			fmt.Fprintln(stdout)
		}
		return nil
	}
	fd := res.Found
	if !f.asJSON {
		ob, of := fd.Original.Size()
		nb, nf := fd.Program.Size()
		fmt.Fprintf(stdout, "%s broke (%s) in program %d of seed %d, after %v of wall time (%d programs, %.0f programs/s);\n",
			what, course.KindList(fd.OriginalViolations), res.Programs, res.Seed, fd.After.Round(time.Millisecond), res.Programs, rate)
		fmt.Fprintf(stdout, "shrunk from %s and %s to %s and %s that break it the same way (%s), in %s:\n\n",
			course.Count(ob, "buyer", "buyers"), course.Count(of, "fault", "faults"), course.Count(nb, "buyer", "buyers"), course.Count(nf, "fault", "faults"),
			fd.Way, course.Count(fd.Shrink, "try", "tries"))
		for _, l := range fd.Lines {
			fmt.Fprintf(stdout, "  %s\n", l)
		}
		fmt.Fprintf(stdout, "\nverdict: %s\n", course.KindList(fd.Report.Violations))
		for _, e := range fd.Report.Explain {
			fmt.Fprintf(stdout, "  %s: %s\n", e.Kind, e.Sentence)
		}
		for _, n := range fd.Report.Notes {
			fmt.Fprintf(stdout, "  note: %s\n", n)
		}
		fmt.Fprintf(stdout, "\nreplay: go run ./lab explore %s%s\n", replayArgs(what, fd.Original.Seed, f), "")
		if f.save != "" {
			dir := "" // a program of a learner's lock plays in a lab built with it
			if _, err := catalog.Find(what); err != nil {
				dir = "-dir " + what + " "
			}
			fmt.Fprintf(stdout, "saved: %s (go run ./lab judge %s judges it again; go run ./lab %s-program %s plays it in the terminal lab)\n", f.save, f.save, dir, f.save)
		}
		if f.html != "" {
			fmt.Fprintf(stdout, "page: %s\n", f.html)
		}
	}
	return fmt.Errorf("%s: a program of %s broke the lock (%s)", what, course.Count(len(fd.Program.Buyers), "buyer", "buyers"), course.KindList(fd.Report.Violations))
}

// replayArgs are the arguments that play the program of seed first, and so find and shrink it
// again.
func replayArgs(what string, seed uint64, f exploreFlags) string {
	s := fmt.Sprintf("-seed %d", seed)
	if f.buyers != 3 {
		s += fmt.Sprintf(" -buyers %d", f.buyers)
	}
	if f.nodes != 1 {
		s += fmt.Sprintf(" -nodes %d", f.nodes)
	}
	if f.faults != "" {
		s += " -faults " + f.faults
	}
	if f.kinds != "" {
		s += " -kinds " + f.kinds
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

// parseFaults reads -faults: names of explore.Faults, comma-separated, or "none".
func parseFaults(list string) ([]history.Fault, error) {
	out := []history.Fault{}
	if list == "none" {
		return out, nil
	}
	for _, name := range strings.Split(list, ",") {
		f := history.Fault(strings.TrimSpace(name))
		if !slices.Contains(explore.Faults, f) {
			return nil, usageError("-faults: no fault %q (want some of %s, or none)", name, faultNames(explore.Faults))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// faultNames is fs, comma-separated.
func faultNames(fs []history.Fault) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}
