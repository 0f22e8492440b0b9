package main

// The learners' folders the grade, explore and docs tests grade: made inside the module beside the
// steps, as a learner makes one.

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// learnerFolder makes an empty folder inside the module, beside the steps, as a learner would,
// and removes it when the test ends. It returns its path from the lab's folder (the tests' working
// directory), as a learner in lab/ would type it.
func learnerFolder(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join("..", "steps"), "gradetest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// copyStep copies step slug's folder into a learner's folder, as module 7 asks a learner to, and
// returns it. drop names files to leave out. The folder is the test's own, at a fresh path: a test
// that edits its copy takes it.
func copyStep(t *testing.T, slug string, drop ...string) string {
	t.Helper()
	dir := learnerFolder(t)
	copyStepInto(t, dir, slug, drop...)
	return dir
}

// sharedCopy is a copy of step slug without the files drop names, made once for every test that
// grades or explores it and never changes it, and graded in this binary (ingrader_test.go): its
// package is the step's, which this binary holds, so grade and explore build nothing for it.
func sharedCopy(t *testing.T, slug string, drop ...string) string {
	t.Helper()
	return sharedFolder(t, true, append([]string{"step", slug}, drop...), func(dir string) { copyStepInto(t, dir, slug, drop...) })
}

// builtCopy is sharedCopy's folder for the tests that grade or explore it end to end: its grades
// and explorations build the real grader and explorer with its package laid over them (one build
// of each, buildcache_test.go).
func builtCopy(t *testing.T, slug string, drop ...string) string {
	t.Helper()
	return sharedFolder(t, false, append([]string{"built", slug}, drop...), func(dir string) { copyStepInto(t, dir, slug, drop...) })
}

// sharedLearner is a learner-style package kept in testdata/learners (a lock written to be graded,
// not a step), copied once into a learner's folder for every test that grades it. Go does not
// compile testdata: its grades build the real grader.
func sharedLearner(t *testing.T, name string) string {
	t.Helper()
	return sharedFolder(t, false, []string{"learner", name}, func(dir string) {
		src := filepath.Join("testdata", "learners", name)
		ents, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// sharedFolders are the learners' folders sharedFolder made, by key; TestMain removes them.
var sharedFolders struct {
	sync.Mutex
	dirs map[string]string
}

// sharedFolder is the learner's folder of key, made (fill writes its files) on the first call of
// this process, inBinary saying whether this binary grades it (ingrader_test.go). Its path is
// steps/gradetest-N, N a hash of key: the same path in every run. Hazard: a folder's path is part
// of what Go's build cache keys a compile by, so a learner built at a fresh path each run is
// compiled anew and kept (each go test ./... added 236 MB to the cache, never read again); at one
// path, the second run's builds are the first's. A folder of that name already there
// (another go test of this module running now, or one killed before its clean-up) is left alone,
// and this run takes a fresh path.
func sharedFolder(t *testing.T, inBinary bool, key []string, fill func(dir string)) string {
	t.Helper()
	sharedFolders.Lock()
	defer sharedFolders.Unlock()
	k := strings.Join(key, "\x00")
	if dir, ok := sharedFolders.dirs[k]; ok {
		return dir
	}
	h := fnv.New32a()
	h.Write([]byte(k))
	dir := filepath.Join("..", "steps", fmt.Sprintf("gradetest-%d", h.Sum32()))
	if err := os.Mkdir(dir, 0o755); errors.Is(err, fs.ErrExist) {
		t.Logf("%s is there already (another go test of this module, or one killed before its clean-up): a fresh folder, built anew", dir)
		dir, err = os.MkdirTemp(filepath.Join("..", "steps"), "gradetest-")
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if sharedFolders.dirs == nil {
		sharedFolders.dirs = map[string]string{}
	}
	sharedFolders.dirs[k] = dir
	fill(dir)
	if inBinary {
		gradeInBinary(t, dir, key[1])
	}
	return dir
}

// forgetSharedFolders removes the folders sharedFolder made (TestMain, at the end).
func forgetSharedFolders() {
	sharedFolders.Lock()
	defer sharedFolders.Unlock()
	for _, dir := range sharedFolders.dirs {
		os.RemoveAll(dir)
	}
	sharedFolders.dirs = nil
}

// copyStepInto copies step slug's files but drop into dir.
func copyStepInto(t *testing.T, dir, slug string, drop ...string) {
	t.Helper()
	src := filepath.Join("..", "steps", slug)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || slices.Contains(drop, e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
