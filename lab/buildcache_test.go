package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lockstep-lab/lockstep/lab/grading"
)

// One build of each binary for all the lab's tests. grade, explore, run and matrix build a test
// binary each time they run (a compile of the learner's package and a link of the whole binary:
// seconds of CPU), and several tests build the very same one (a copy of step 09 graded by two
// tests and explored in the grader). A learner this binary holds builds nothing at all (gradeHere,
// ingrader_test.go). In this process buildPkg and buildTest keep what they built and hand each later caller
// with the same key a hard link to it in the caller's own folder, as a build would leave it there
// (close removes it as it would a build). The first caller of each key builds for real, end to
// end; a failed or interrupted build is not kept. The lab binary the tmux tests run builds for
// itself (lab -dir's overlay), never through here.
//
// A key is everything that goes into the build: the go command's arguments (the overlay's
// package, file name, code and go subcommand, or the package built as it stands), the module's
// folder, the learner's folder, its every file's name and content, the rest of the module's files
// (each path, size and modification time: no test edits the module but its learners' folders,
// and a file that changed all the same is a new key), and the environment the go command reads
// for a build (GOFLAGS and the like). So a key never names a binary built from other sources.

func init() {
	buildPkg, buildTest = cachedBuildPkg, cachedBuildTest
	builds.base = os.TempDir() // a test that sets $TMPDIR removes that folder when it ends
}

var builds struct {
	sync.Mutex
	base string                 // where dir is made
	dir  string                 // the binaries kept; TestMain removes it
	bins map[string]string      // by key, once built
	busy map[string]*sync.Mutex // by key: one build at a time, the callers after it wait and link
}

func cachedBuildPkg(ctx context.Context, p *grading.Pkg, ov grading.Overlay, dir string) (string, error) {
	if bin, ok, err := gradeHere(p, ov, dir); ok {
		return bin, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "overlay\x00%s\x00%s\x00%q\x00%s\x00", ov.Pkg, ov.Name, ov.Args, ov.Code)
	fmt.Fprintf(h, "learner\x00%s\x00%s\x00%s\x00", p.Abs, p.Rel, p.ImportPath)
	if err := hashFiles(h, p.Abs, ""); err != nil {
		return "", err
	}
	return cachedBuild(ctx, h, p.Root, p.Abs, dir, func(into string) (string, error) { return grading.Build(ctx, p, ov, into) })
}

func cachedBuildTest(ctx context.Context, root, pkg, what string, dir string, flags ...string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "test\x00%s\x00%q\x00", pkg, flags)
	return cachedBuild(ctx, h, root, "", dir, func(into string) (string, error) { return grading.BuildTest(ctx, root, pkg, what, into, flags...) })
}

// cachedBuild finishes the key h began (the module in root, but for learner, which the caller
// hashed) and links the binary of that key into dir, building it first (build, into a folder of
// the cache) if this process has not.
func cachedBuild(ctx context.Context, h hash.Hash, root, learner, dir string, build func(into string) (string, error)) (string, error) {
	fmt.Fprintf(h, "module\x00%s\x00", root)
	for _, v := range []string{"GOFLAGS", "GOOS", "GOARCH", "CGO_ENABLED", "GOEXPERIMENT", "GOTOOLCHAIN", "GOROOT", "GOPATH", "GOWORK", "GOAMD64"} {
		fmt.Fprintf(h, "env\x00%s=%s\x00", v, os.Getenv(v))
	}
	goTool, _ := grading.GoTool() // none: the build fails, and is not kept
	fmt.Fprintf(h, "go\x00%s\x00", goTool)
	if err := statModule(h, root, learner); err != nil {
		return "", err
	}
	key := hex.EncodeToString(h.Sum(nil))

	builds.Lock()
	if builds.busy == nil {
		builds.bins, builds.busy = map[string]string{}, map[string]*sync.Mutex{}
	}
	if builds.dir == "" {
		d, err := os.MkdirTemp(builds.base, "lockstep-testbuilds-")
		if err != nil {
			builds.Unlock()
			return "", err
		}
		builds.dir = d
	}
	mu := builds.busy[key]
	if mu == nil {
		mu = &sync.Mutex{}
		builds.busy[key] = mu
	}
	cacheDir := builds.dir
	builds.Unlock()

	mu.Lock()
	defer mu.Unlock()
	builds.Lock()
	bin, ok := builds.bins[key]
	builds.Unlock()
	if !ok {
		into, err := os.MkdirTemp(cacheDir, "build-")
		if err != nil {
			return "", err
		}
		if bin, err = build(into); err != nil {
			os.RemoveAll(into)
			return "", err
		}
		builds.Lock()
		builds.bins[key] = bin
		builds.Unlock()
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	out := filepath.Join(dir, grading.Exe("bin"))
	if err := os.Link(bin, out); err != nil {
		if err := copyFile(bin, out); err != nil {
			return "", err
		}
	}
	return out, nil
}

// forgetBuilds removes every binary kept (TestMain, at the end).
func forgetBuilds() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir, builds.bins, builds.busy = "", nil, nil
}

// hashFiles writes every file under dir (its path from dir, under prefix, and its content) to h.
func hashFiles(h io.Writer, dir, prefix string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "file\x00%s\x00%d\x00", filepath.Join(prefix, rel), len(b))
		h.Write(b)
		return nil
	})
}

// statModule writes each file of the module in root to h, its path, size and modification time,
// but for .git, the learner's folder (hashed by content) and the other learners' folders the tests
// make and remove as they run (steps/gradetest-*: no build but their own reads them).
func statModule(h io.Writer, root, learner string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone since its folder was read: no build reads it
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == learner || d.Name() == ".git" || strings.HasPrefix(d.Name(), "gradetest-") {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "stat\x00%s\x00%d\x00%d\x00%v\x00", rel, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
		return nil
	})
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
