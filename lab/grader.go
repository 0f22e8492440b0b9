package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
)

// stopSignals end what a command that builds a binary is doing, and it removes the build: Ctrl-C,
// a SIGTERM, and a SIGHUP. Hazard: a terminal closed under lab -dir (a tmux window killed) sends
// SIGHUP, and a build left in $TMPDIR/lockstep-grade-* stayed there for good. On Windows Go
// delivers Ctrl-C and Ctrl-Break as os.Interrupt and a closed console window, a log-off or a
// shutdown as SIGTERM; SIGHUP never comes there.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// buildPkg and buildTest build the test binaries and labs the commands run (grading.Build,
// grading.BuildTest), each into the folder it is given. They are variables for the lab's tests
// alone, which build the same binary for many of their tests and keep one of each
// (buildcache_test.go); the lab itself always builds afresh.
var (
	buildPkg  = grading.Build
	buildTest = grading.BuildTest
)

// grader is internal/matrix's test binary: Go has virtual time under go test alone, so the
// headless commands play the embedded backend in it. lab grade plays a learner's row there
// (TestGrade, with the learner's package laid over it); lab run and lab matrix play their cells
// there (TestPlay; in a lab built by lab -dir, with that learner's package laid over it too, so
// its slug plays); lab explore and grade's exploring play their programs there (TestExplore). A
// lab built from source builds it from the module it runs in; a downloaded lab runs the one packed
// beside it (packedGrader), and builds one only for a learner's package.
type grader struct {
	ctx  context.Context
	tmp  string // the files the binary reads and writes (and its build); close removes it
	bin  string
	what string // "the grader of steps/mine", for an error
}

// buildGrader builds the grader, saying so on stderr: with p's package laid over it (nodes lock
// nodes) when p is given; else it is the one packed beside a downloaded lab, or one built from the
// module that holds the working directory as it stands. ctx ending (Ctrl-C) stops the build: a
// childExit with status 130. Hazard: close what it returns, or its build stays behind.
func buildGrader(ctx context.Context, p *grading.Pkg, nodes int, stderr io.Writer) (*grader, error) {
	g := &grader{ctx: ctx, what: "the grader"}
	var root string
	if p != nil {
		root, g.what = p.Root, "the grader of "+p.Rel
	} else {
		bin, err := packedGrader()
		if err != nil {
			return nil, err
		}
		g.bin = bin
		if bin == "" {
			wd, err := os.Getwd()
			if err == nil {
				root, err = grading.ModuleRoot(wd)
			}
			if err != nil {
				return nil, fmt.Errorf("the embedded backend plays in virtual time in a grader built from lockstep's source (go test -c ./internal/matrix), and %v: run the lab inside lockstep's folder, use a downloaded lab (its grader is packed beside it), or choose another backend with -redis", err)
			}
		}
	}
	tmp, err := os.MkdirTemp("", "lockstep-grade-")
	if err != nil {
		return nil, err
	}
	g.tmp = tmp
	switch {
	case g.bin != "": // packed beside the lab
		return g, nil
	case p != nil:
		fmt.Fprintf(stderr, "lab: building the grader with %s (go test -c; the first time takes a while)…\n", p.Rel)
		g.bin, err = buildPkg(ctx, p, grading.GraderOverlay(p, nodes), tmp)
	default:
		fmt.Fprintln(stderr, "lab: building the grader, to play in virtual time (go test -c ./internal/matrix; the first time takes a while)…")
		g.bin, err = buildTest(ctx, root, "internal/matrix", "the grader", tmp, grading.SeededFlags...)
	}
	if err != nil {
		g.close()
		if ctx.Err() != nil {
			return nil, &childExit{code: 130}
		}
		return nil, err
	}
	return g, nil
}

// inspectToBuild is grading.Inspect of the learner's folder dir for a command that compiles it
// (what: "grade"), once it has found the go command that will: a lab downloaded to a machine
// without Go says so first, in one line, and what runs without it.
func inspectToBuild(what, dir string) (*grading.Pkg, error) {
	if _, err := grading.GoTool(); err != nil {
		return nil, fmt.Errorf("%s compiles your lock with the Go toolchain, and %w; the terminal lab, run, matrix, judge, explore of a step and pages run without it", what, err)
	}
	return grading.Inspect(dir)
}

// close removes the grader's files and build (never a packed grader: it lives beside the lab).
func (g *grader) close() { os.RemoveAll(g.tmp) }

// command is the grader running test alone, with env added to this process's; ctx ending stops
// it (a SIGTERM: it ends everything it started).
func (g *grader) command(test string, env []string) *exec.Cmd {
	cmd := exec.CommandContext(g.ctx, g.bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Dir = g.tmp // it reads nothing of the source tree: a packed grader has none beside it
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = grading.Cancel(cmd, syscall.SIGTERM)
	cmd.WaitDelay = 30 * time.Second // its own clean-up (every Redis it started) takes a moment
	return cmd
}

// run runs test in the grader, with env added to this process's, and reads what it wrote to
// $LOCKSTEP_GRADE_OUT (a file of the grader's folder, named for the test) into out. err is ctx
// ending (a childExit with status 130: Ctrl-C or a SIGTERM stops the binary, which ends
// everything it started) or a grader that wrote nothing readable, with the line that says why;
// failed is a grader that wrote its file and then failed, for the caller to weigh after what
// the file says (a hung cell's line comes first).
func (g *grader) run(test string, env []string, out any) (failed, err error) {
	file := filepath.Join(g.tmp, test+".json")
	os.Remove(file) // a file an earlier run wrote is not this run's
	cmd := g.command(test, append([]string{matrix.GradeOut + "=" + file}, env...))
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	runErr := cmd.Run()
	if g.ctx.Err() != nil {
		return nil, &childExit{code: 130}
	}
	b, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil || runErr != nil {
		failed = fmt.Errorf("%s failed: %s", g.what, grading.FirstOfLines(strings.TrimSpace(testFailure(log.String(), runErr))))
	}
	if err != nil {
		return nil, failed
	}
	return failed, nil
}

// player plays a headless command's cells (lab run, lab matrix): on the embedded backend in
// virtual time, in a grader built for the command; on the other backends, whose Redis is another
// process's clock, or where a test has set bubble (the lab's tests play in virtual time in their
// own process), in this process through play, on the wall clock or in the test's bubbles.
type player struct {
	backend string
	gr      *grader // nil: in this process
	stop    func()
	once    sync.Once
}

// newPlayer is the player of a headless command on backend; it builds the grader (saying so on
// stderr) where it needs one. Ctrl-C, a SIGTERM or a hang-up (stopSignals) stops what plays: in this process every Redis
// the lab started is stopped and the process exits with status 130 (stopOnSignal); a grader is
// stopped, and the command returns a childExit with status 130. Hazard: close it when the
// command returns, or the build stays behind.
func newPlayer(backend string, stderr io.Writer) (*player, error) {
	if bubble != nil || !matrix.Virtual(backend) {
		return &player{backend: backend, stop: stopOnSignal()}, nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	var p *grading.Pkg
	nodes := 1
	if learner != nil { // a lab built by lab -dir: its learner's step plays in the grader too
		var err error
		if p, err = grading.Inspect(learnerDir); err != nil {
			stop()
			return nil, err
		}
		nodes = learner.Nodes
	}
	gr, err := buildGrader(ctx, p, nodes, stderr)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "lab: interrupted; the grader's build is stopped and removed")
		}
		stop()
		return nil, err
	}
	return &player{backend: backend, gr: gr, stop: func() {
		interrupted := ctx.Err() != nil // before stop, which ends ctx too
		stop()
		gr.close()
		if interrupted {
			fmt.Fprintln(stderr, "lab: interrupted; the grader is stopped and its build removed")
		}
	}}, nil
}

// close ends what newPlayer started; a second close does nothing.
func (pl *player) close() { pl.once.Do(pl.stop) }

// played is one cell's report, or the error that left it without one, as play returns them, and
// the clock a grader says it played on (matrix.VirtualTime, matrix.WallClock; "" in this
// process).
type played struct {
	rep   *referee.Report
	err   error
	clock string
}

// cells plays each of scs against st, one after the other, each on a fresh env of the player's
// backend, and returns what each play returned. In this process, a play that failed otherwise
// than a scenario the backend cannot stage or a topology it cannot give (a backend that would not
// start) is the last: the cells after it are not played, as matrix.Row stops there. err is the
// grader's failure (a cell that never ended, a grader that crashed) or Ctrl-C: nothing was
// played then.
func (pl *player) cells(st *steps.Step, scs []steps.Scenario) ([]played, error) {
	out := make([]played, 0, len(scs))
	if pl.gr == nil {
		for _, sc := range scs {
			rep, err := play(st, sc, pl.backend)
			out = append(out, played{rep: rep, err: err})
			if err != nil && !errors.Is(err, arena.ErrCannotStage) && !errors.Is(err, redisenv.ErrSingleNode) {
				break
			}
		}
		return out, nil
	}
	want := make([]matrix.Want, len(scs))
	for i, sc := range scs {
		want[i] = matrix.Want{Step: st.Slug, Scenario: sc}
	}
	b, err := json.Marshal(want)
	if err != nil {
		return nil, err
	}
	in := filepath.Join(pl.gr.tmp, "cells.json")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		return nil, err
	}
	var ps matrix.Plays
	failed, err := pl.gr.run("TestPlay", []string{"LAB_REDIS=" + pl.backend, matrix.PlayIn + "=" + in}, &ps)
	switch {
	case err != nil:
		return nil, err
	case ps.Hung != "":
		return nil, errors.New(ps.Hung)
	case failed != nil:
		return nil, failed
	case len(ps.Cells) != len(want):
		return nil, fmt.Errorf("%s played %d cells of %d", pl.gr.what, len(ps.Cells), len(want))
	}
	for _, p := range ps.Cells {
		rep, err := p.Result()
		out = append(out, played{rep: rep, err: err, clock: p.Clock})
	}
	return out, nil
}
