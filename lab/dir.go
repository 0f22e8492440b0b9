package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/lab/grading"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// lab -dir DIR: the terminal lab built with the learner's lock laid over it, and the learner's
// step as the lab knows it.

// learner is the learner's step when this binary was built with their package laid over it;
// nil in the lab as shipped. learnerDir is that package's folder, absolute.
var (
	learner       *steps.Step
	learnerDir    string
	learnerShared []string // its package-level state shared by every buyer, in words (registerLearner)
)

// registerLearner is what the overlaid file calls from its init: it makes the learner's package a
// step of this binary's catalog (course.LearnerStep), a side road at the end of the picker. src
// nil means the package exports no Source: the code pane reads its folder. Hazard: it changes
// catalog.Steps, which every command of this binary iterates — only a lab built by grade may
// call it.
func registerLearner(dir, slug string, nodes int, newFn func(steps.Proc) steps.Locker,
	order func(context.Context, steps.Locker, steps.Shop) error, src fs.FS, shared []string) {
	if src == nil {
		src = os.DirFS(dir)
	}
	learner = course.LearnerStep(slug, nodes, newFn, order, src, shared)
	learnerShared = shared
	learnerDir = dir
	catalog.Steps = append(catalog.Steps, learner)
}

// runLearnerLab builds the lab with p laid over it and runs that lab with args, its output going
// to stdout and stderr: its exit status is the command's. Ctrl-C and a hang-up (its terminal
// closed) reach both (one process group); a SIGTERM to this process is passed on. Either way the
// build is removed.
func runLearnerLab(p *grading.Pkg, nodes int, args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	tmp, err := os.MkdirTemp("", "lockstep-grade-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(stderr, "lab: building the lab with %s (go build; the first time takes a while)…\n", p.Rel)
	bin, err := buildPkg(ctx, p, grading.LabOverlay(p, nodes), tmp)
	if err != nil {
		if ctx.Err() != nil {
			return &childExit{code: 130}
		}
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Cancel = grading.Cancel(cmd, syscall.SIGTERM)
	cmd.WaitDelay = 30 * time.Second // its own clean-up (every Redis it started) takes a moment
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return &childExit{code: ee.ExitCode()}
	case ctx.Err() != nil:
		return &childExit{code: 130}
	}
	return fmt.Errorf("running the lab built with %s: %w", p.Rel, err)
}

// dirFlag takes -dir DIR (and -nodes N) out of the terminal lab's arguments: ok when -dir was
// there. The lab the learner's package is built into gets the rest.
func dirFlag(args []string) (dir string, nodes int, rest []string, ok bool, err error) {
	nodes = 1
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "dir" && name != "nodes") {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 == len(args) {
				return "", 0, nil, false, usageError("flag needs an argument: -%s", name)
			}
			i++
			val = args[i]
		}
		if name == "dir" {
			dir, ok = val, true
		} else if _, err := fmt.Sscan(val, &nodes); err != nil || nodes < 1 || nodes > 9 {
			return "", 0, nil, false, usageError("-nodes %s: want 1…9 lock nodes", val)
		}
	}
	if !ok && nodes != 1 {
		return "", 0, nil, false, usageError("-nodes goes with -dir (your lock) or with grade")
	}
	return dir, nodes, rest, ok, nil
}

// dirCmd opens the terminal lab with the learner's lock in DIR as the picker's last line.
func dirCmd(dir string, nodes int, rest []string, stdout, stderr io.Writer) error {
	for _, a := range rest {
		if a == "-h" || a == "-help" || a == "--help" {
			return tuiCmd(rest, stdout, stderr)
		}
	}
	p, err := inspectToBuild("-dir", dir)
	if err != nil {
		return err
	}
	return runLearnerLab(p, nodes, rest, stdout, stderr)
}
