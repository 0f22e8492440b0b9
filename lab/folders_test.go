package main

// The learners' folders the grade, explore and docs tests grade: made inside the module beside the
// steps, as a learner makes one.

import (
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
// returns it. drop names files to leave out.
func copyStep(t *testing.T, slug string, drop ...string) string {
	t.Helper()
	dir := learnerFolder(t)
	copyStepInto(t, dir, slug, drop...)
	return dir
}

// sharedCopies are the learners' folders sharedCopy made, by step and files left out; TestMain
// removes them.
var sharedCopies struct {
	sync.Mutex
	dirs map[string]string
}

// sharedCopy is copyStep's folder, made once for every test that grades or explores a copy of
// slug without those files and never changes it: one folder, so one build of its grader or
// explorer serves them all (buildcache_test.go). A test that edits its copy takes copyStep's.
func sharedCopy(t *testing.T, slug string, drop ...string) string {
	t.Helper()
	sharedCopies.Lock()
	defer sharedCopies.Unlock()
	key := strings.Join(append([]string{slug}, drop...), "\x00")
	if dir, ok := sharedCopies.dirs[key]; ok {
		return dir
	}
	dir, err := os.MkdirTemp(filepath.Join("..", "steps"), "gradetest-")
	if err != nil {
		t.Fatal(err)
	}
	copyStepInto(t, dir, slug, drop...)
	if sharedCopies.dirs == nil {
		sharedCopies.dirs = map[string]string{}
	}
	sharedCopies.dirs[key] = dir
	return dir
}

// forgetSharedCopies removes the folders sharedCopy made (TestMain, at the end).
func forgetSharedCopies() {
	sharedCopies.Lock()
	defer sharedCopies.Unlock()
	for _, dir := range sharedCopies.dirs {
		os.RemoveAll(dir)
	}
	sharedCopies.dirs = nil
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
