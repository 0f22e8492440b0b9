package tui

import (
	"io/fs"
	"sort"
	"strings"
)

// codeFile is one file of a step as the code pane shows it: every line, kept, added or removed.
type codeFile struct {
	name string
	ops  []diffOp
}

// fileNames lists a step's own files, tests left out.
func fileNames(src fs.FS) []string {
	if src == nil {
		return nil
	}
	ents, _ := fs.ReadDir(src, ".")
	var out []string
	for _, e := range ents {
		if !e.IsDir() && !strings.HasSuffix(e.Name(), "_test.go") {
			out = append(out, e.Name())
		}
	}
	return out
}

// readLines reads one file of src as lines, tabs as four spaces.
func readLines(src fs.FS, name string) []string {
	if src == nil {
		return nil
	}
	b, err := fs.ReadFile(src, name)
	if err != nil {
		return nil
	}
	s := strings.TrimRight(strings.ReplaceAll(string(b), "\t", "    "), "\n")
	return strings.Split(s, "\n")
}

// stepFiles is every file of src, each as a diff from the file of the same name in base; with a
// nil base, the source alone (every line kept).
func stepFiles(base, src fs.FS) []codeFile {
	names := map[string]bool{}
	for _, n := range fileNames(src) {
		names[n] = true
	}
	for _, n := range fileNames(base) {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var out []codeFile
	for _, n := range sorted {
		if base == nil {
			var ops []diffOp
			for _, l := range readLines(src, n) {
				ops = append(ops, diffOp{' ', l})
			}
			out = append(out, codeFile{n, ops})
			continue
		}
		out = append(out, codeFile{n, lineDiff(readLines(base, n), readLines(src, n))})
	}
	return out
}
