package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/lockstep-lab/lockstep/lab/grading"
)

// What scripts/dist.sh stamps into a lab it packs (-ldflags -X): the release's version and commit,
// and the sha256 of the grader it packs beside the lab (graderName). A lab built otherwise (go
// run, go build) has none of them: it says what Go's build info knows of it, and builds its
// grader from the source it runs in.
var (
	version   string
	commit    string
	graderSum string
)

// graderName is the grader's file beside a downloaded lab (Exe adds .exe on Windows).
const graderName = "lab-grader"

// versionCmd prints the lab's version, its commit, the Go that built it and the system it runs
// on; a downloaded lab says too whether the grader packed beside it is there and its own (exit 1
// when it is not).
func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "lab version\n\nPrints the lab's version and commit; a downloaded lab checks the grader packed beside it.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "lab", versionLine())
	if graderSum == "" {
		fmt.Fprintln(stdout, "grader: none packed with this lab: run, matrix, grade and explore build one from lockstep's source (go test -c ./internal/matrix), in its folder")
		return nil
	}
	bin, err := packedGrader()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "grader: %s, the one packed with this lab (sha256 %s…)\n", bin, graderSum[:12])
	return nil
}

// versionLine is the lab's version in one line: "v0.1.0, commit 1a2b3c4d5e6f, go1.26.8
// linux/amd64". A lab that dist.sh did not stamp gives its module's version ("(devel)" from a
// checkout) and the commit Go stamped, if it did: go build in a git clone does; go run, and a
// build in a git worktree or with -buildvcs=false, do not, and then it says so.
func versionLine() string {
	v, c, modified := version, commit, false
	if bi, ok := debug.ReadBuildInfo(); ok && v == "" {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				c = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	switch {
	case c == "":
		c = "no commit stamped (go run stamps none, nor go build in a git worktree or with -buildvcs=false)"
	case len(c) > 12:
		c = "commit " + c[:12]
	default:
		c = "commit " + c
	}
	if modified {
		c += " with uncommitted changes"
	}
	return fmt.Sprintf("%s, %s, %s %s/%s", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// packedGrader is the grader packed beside a downloaded lab, checked to be the very one dist.sh
// packed with it (graderBeside); "" for a lab built from source, which builds its grader.
func packedGrader() (string, error) {
	if graderSum == "" {
		return "", nil
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("finding the grader beside the lab: %w", err)
	}
	return graderBeside(filepath.Dir(exe), graderSum)
}

// graderBeside is the grader in dir, the lab's folder, if its sha256 is sum (the one dist.sh
// stamped into the lab). A grader missing, or from another archive, is an error in one line: the
// lab and its grader must be one build of one commit, or a cell could play other code than the
// lab shows.
func graderBeside(dir, sum string) (string, error) {
	name := grading.Exe(graderName)
	bin := filepath.Join(dir, name)
	f, err := os.Open(bin)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("the lab plays in virtual time in the grader packed beside it, and there is no %s: unpack the whole archive (%s and %s) into one folder", bin, grading.Exe("lab"), name)
	}
	if err != nil {
		return "", fmt.Errorf("the grader beside the lab: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading the grader beside the lab: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, sum) {
		return "", fmt.Errorf("%s is not the grader packed with this lab (lab %s): unpack %s and %s from the same archive", bin, versionLine(), grading.Exe("lab"), name)
	}
	return bin, nil
}
