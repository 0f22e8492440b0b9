package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a Markdown link's target: [text](target) or [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksResolve: every relative link in the repository's Markdown (README, docs/, each
// step's README, the trainer's notes) names a file or folder inside the repository; a link to a
// file that is gone, or outside the clone (the founders' ../shared), fails.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "dist" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".md") {
			return nil
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				abs := filepath.Join(filepath.Dir(path), filepath.FromSlash(target))
				if in, _ := filepath.Rel(root, abs); in == ".." || strings.HasPrefix(in, ".."+string(filepath.Separator)) {
					t.Errorf("%s:%d links %s, outside the repository", rel, i+1, m[1])
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s:%d links %s, which is not there", rel, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("read %d Markdown files under %s; want README, docs/ and the steps' READMEs", files, root)
	}
}
