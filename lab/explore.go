package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"github.com/muesli/termenv"
)

// Exploring a lock. The lab's scenarios break a lock in the ways someone wrote down; "lab explore"
// looks for the others, as TigerBeetle's VOPR does: in the grader (internal/matrix's test binary,
// with a learner's package laid over it as grade lays it), whose TestExplore plays random programs
// of the arena's moves from a seed, each in virtual time, maps every kind they break the lock with,
// and shrinks each kind's first program. The binary writes what it found as JSON
// (explore.Result); explore prints the map, the worst kind first, each program with the command
// that plays it again. -replay plays a saved program, -program any program or case.

// errTwoStories marks a program that played two different histories (-check), or a replay whose
// verdict is not the one saved: exit status 3.
var errTwoStories = errors.New("the same program told two stories")

// exploreFlags are explore's flags.
type exploreFlags struct {
	seed    uint64
	budget  time.Duration
	progs   int // the most programs to play (0: as many as the budget allows)
	buyers  int
	nodes   int
	asJSON  bool
	save    string
	html    string
	faults  string
	kinds   string
	first   bool
	check   bool
	replay  string // a file explore -save wrote: play its program again
	program string // a program, a case or a saved program, as a file or inline JSON
}

// exploreCmd explores the step or the learner's folder its one argument names: exit 1 with the
// map of what broke the lock, 0 when nothing did within the budget, 2 on bad input, 3 when -check
// saw a program tell two stories.
func exploreCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("explore", "lab explore [-seed 1] [-budget 60s] [-programs N] [-buyers 3] [-faults LIST] [-kinds LIST] [-first] [-check] [-nodes 1] [-json] [-save FILE] [-html FILE] STEP|DIR\n"+
		"       lab explore -replay FILE [-check] [-json]\n"+
		"       lab explore -program FILE|JSON [-check] [-json] STEP|DIR\n\n"+
		"Plays random programs against a step of the catalog (04, 13_pubsub…) or your lock's package in DIR:\n"+
		"each seed draws its own fault mix (which faults, how often, how many buyers), then a program from it:\n"+
		"buyers with random orders, work and waits, the lab's faults at points defined by what a process did,\n"+
		"and a quiet tail in which nothing strikes; each in virtual time on the embedded backend, judged for\n"+
		"every kind. It goes on for the budget and maps every kind that broke the lock, the worst first\n"+
		"(overlap, oversold, foreign-release, foreign-renewal, then the others), each shrunk to the smallest\n"+
		"program that still shows it, with the command that plays it again: exit 1. Nothing broke it: exit 0.\n"+
		"The same seed plays the same programs. -check plays each program found twice more and exits 3 at the\n"+
		"first record the two differ in. -replay plays the program explore -save wrote again (exit 3 when\n"+
		"its verdict is not the saved one); -program plays one (a file of cases/, a saved one, or JSON).", stderr)
	var f exploreFlags
	fs.Uint64Var(&f.seed, "seed", 1, "the first program's seed (program i is seed+i)")
	fs.DurationVar(&f.budget, "budget", 60*time.Second, "wall time for playing programs (the build and shrinking come on top)")
	fs.IntVar(&f.progs, "programs", 0, "play at most this many programs (0: as many as -budget allows): the same programs, so the same map, on any machine")
	fs.IntVar(&f.buyers, "buyers", 3, "the most buyers a program has (1…8)")
	fs.IntVar(&f.nodes, "nodes", 1, "lock nodes each process gets, for DIR (Proc.Nodes): 3 for a quorum lock")
	fs.StringVar(&f.faults, "faults", "", "the faults a program may have, comma-separated (default every one: "+faultNames(explore.Faults)+"); \"none\" for none")
	fs.StringVar(&f.kinds, "kinds", "", "the kinds a program is judged for, comma-separated (default every kind: "+course.KindList(steps.Kinds)+")")
	fs.BoolVar(&f.first, "first", false, "stop at the first program that breaks the lock, shrunk for the worst kind of its verdict")
	fs.BoolVar(&f.check, "check", false, "play each program found (or given) twice more, and exit 3 at the first record the two plays differ in")
	fs.StringVar(&f.replay, "replay", "", "play the program explore -save wrote to this file again, against the lock it was found in")
	fs.StringVar(&f.program, "program", "", "play this program against STEP|DIR: a file of cases/ (says whether the lock has the bug), a file explore -save wrote, or the program as JSON")
	fs.BoolVar(&f.asJSON, "json", false, "print what was found as JSON (explore.Result), for machines")
	fs.StringVar(&f.save, "save", "", "write the worst program found (the first of the map; -kinds picks another) and its run to this file (lab judge reads it)")
	fs.StringVar(&f.html, "html", "", "write the worst program found as one self-contained page to this file: the program in words, its verdict and timeline")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	target := ""
	if fs.NArg() > 0 {
		target = fs.Arg(0)
		if err := parse(fs, fs.Args()[1:]); err != nil { // flags after the argument, as a learner types them
			return err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	req, err := exploreRequest(f, set)
	if err != nil {
		return err
	}
	var given *givenProgram
	switch {
	case f.replay != "" && f.program != "":
		return usageError("-replay and -program: give one (-replay plays a saved program against its own lock)")
	case f.replay != "":
		if target != "" {
			return usageError("-replay plays the program against the lock it was found in, which %s names: no %s (use -program %s %s)", f.replay, target, f.replay, target)
		}
		if given, err = readReplay(f.replay); err != nil {
			return err
		}
		target = given.step
	case f.program != "":
		if given, err = readProgram(f.program); err != nil {
			return err
		}
	}
	if given != nil {
		for _, name := range []string{"seed", "budget", "buyers", "faults", "kinds", "first", "save", "html"} {
			if set[name] {
				return usageError("-%s explores; -replay and -program play the program they are given", name)
			}
		}
		req.Play = []explore.Program{given.program}
		if given.c != nil && req.Kinds == nil {
			req.Kinds = given.c.Kinds()
		}
	}
	if target == "" {
		return usageError("explore needs a step (e.g. 04) or your lock's folder (e.g. steps/mine) (see -h)")
	}
	var p *grading.Pkg
	if st, err := catalog.Find(target); err == nil {
		if set["nodes"] {
			return usageError("-nodes goes with your lock's folder: %s takes %s", st.Slug, course.Count(max(st.Nodes, 1), "lock node", "lock nodes"))
		}
		req.Step = st.Slug
	} else if _, statErr := os.Stat(target); statErr != nil {
		return usageError("%v, and no folder %s", err, target)
	} else if p, err = inspectToBuild("explore of your lock's folder", target); err != nil {
		return err
	}
	return exploreRun(req, p, f, given, stdout, stderr)
}

// exploreRequest checks explore's flags and turns them into the request the explorer reads.
func exploreRequest(f exploreFlags, set map[string]bool) (explore.Request, error) {
	req := explore.Request{Seed: f.seed, Budget: f.budget, Programs: f.progs, Buyers: f.buyers, First: f.first, Check: f.check}
	switch {
	case f.budget <= 0:
		return req, usageError("-budget %v: want a positive duration, e.g. 60s", f.budget)
	case f.progs < 0:
		return req, usageError("-programs %d: want a number of programs, or 0 for as many as -budget allows", f.progs)
	case f.buyers < 1 || f.buyers > 8:
		return req, usageError("-buyers %d: want 1…8", f.buyers)
	case f.nodes < 1 || f.nodes > 9:
		return req, usageError("-nodes %d: want 1…9 lock nodes", f.nodes)
	}
	if set["faults"] {
		faults, err := parseFaults(f.faults)
		if err != nil {
			return req, err
		}
		req.Faults = faults
	}
	if f.kinds != "" {
		for _, name := range strings.Split(f.kinds, ",") {
			k := steps.Kind(strings.TrimSpace(name))
			if !slices.Contains(steps.Kinds, k) {
				return req, usageError("-kinds: no kind %q (want some of %s)", name, course.KindList(steps.Kinds))
			}
			req.Kinds = append(req.Kinds, k)
		}
	}
	return req, nil
}

// exploreRun explores in the grader (built with p laid over it, when exploring a learner's
// package; the packed one of a downloaded lab, or one built from source, for a step), and prints
// what it found, or how the program it was given played. Ctrl-C, a SIGTERM or a hang-up stops it
// (stopSignals); either way the build is removed.
func exploreRun(req explore.Request, p *grading.Pkg, f exploreFlags, given *givenProgram, stdout, stderr io.Writer) error {
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
	if given != nil {
		fmt.Fprintf(stderr, "lab: playing %s against %s, in virtual time…\n", given.what, what)
	} else {
		fmt.Fprintf(stderr, "lab: exploring %s from seed %d for %v, in virtual time…\n", what, req.Seed, req.Budget)
	}
	res, err := runExplorer(gr, req, what, stderr)
	if err != nil {
		return err
	}
	if given != nil {
		return printPlayed(res, what, given, f, stdout)
	}
	worst := res.Broke()
	if len(worst) > 0 && f.save != "" {
		if err := saveFound(f.save, worst[0]); err != nil {
			return err
		}
	}
	if len(worst) > 0 && f.html != "" {
		var st *steps.Step // nil for a learner's lock
		if req.Step != "" {
			st, _ = catalog.Find(req.Step)
		}
		if err := writeExplorePage(f.html, st, worst[0], time.Now(), replayLine(worst[0], what, f)); err != nil {
			return err
		}
	}
	return printExplored(res, what, f, nil, stdout)
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
		if p.Found > 0 {
			line += fmt.Sprintf("; %s found", course.Count(p.Found, "kind", "kinds"))
		}
		if p.Shrinking != "" {
			line += "; shrinking " + p.Shrinking
		}
		fmt.Fprintf(stderr, "\r\033[K%s", line)
	}
	if shown {
		fmt.Fprint(stderr, "\r\033[K")
	}
}

// parseFaults reads -faults: names of explore.Faults, comma-separated, or "none" (an empty list:
// no fault at all, where no -faults is every one).
func parseFaults(list string) ([]history.Fault, error) {
	out := []history.Fault{}
	if strings.TrimSpace(list) == "none" {
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
