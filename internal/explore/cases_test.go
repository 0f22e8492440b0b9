package explore_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// casesDir is the museum: programs from real libraries' reported bugs (cases/README.md).
var casesDir = filepath.Join("..", "..", "cases")

// readCases reads every case of the museum. Hazard: it fails t on a file that is not one.
func readCases(t *testing.T) []*explore.Case {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil || len(files) < 5 {
		t.Fatalf("the museum has %d cases (%v); want at least 5", len(files), err)
	}
	var out []*explore.Case
	for _, f := range files {
		c, err := explore.ReadCase(f)
		if err != nil {
			t.Fatal(err)
		}
		if c.Name != strings.TrimSuffix(filepath.Base(f), ".json") || len(c.Story) != 2 || c.Played == "" ||
			!strings.HasPrefix(c.Link, "https://github.com/") || len(c.Expect) == 0 {
			t.Fatalf("%s: a case needs its file's name, a link to the report, a story of two lines, what is played, and the steps it concerns: %+v", f, c)
		}
		out = append(out, c)
	}
	return out
}

// TestCasesGiveTheirVerdicts: each program of the museum gives, against each step its story
// concerns, the verdict its file and cases/README.md state, in virtual time; and says the step
// has the bug exactly where that verdict shows one of the bug's kinds.
func TestCasesGiveTheirVerdicts(t *testing.T) {
	noLeak(t)
	for _, c := range readCases(t) {
		for slug, want := range c.Expect {
			t.Run(c.Name+"/"+slug, func(t *testing.T) {
				rep, err := explore.Run(step(t, slug), c.Program, c.Kinds(), bubble(t))
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Complete() || !slices.Equal(explore.Ordered(rep.Violations), explore.Ordered(want)) {
					t.Fatalf("%s: %v (unjudged %v), want %v\n%s", slug, rep.Violations, rep.Unjudged, want, rep.Text())
				}
				has, err := c.Has(rep)
				if err != nil || has != slices.ContainsFunc(want, func(k vocab.Kind) bool { return slices.Contains(c.Bug, k) }) {
					t.Errorf("%s has the bug: %v (%v), with verdict %v and the bug's kinds %v", slug, has, err, rep.Violations, c.Bug)
				}
			})
		}
	}
}

// TestCasesAreInTheReadme: cases/README.md has a row for each case, with its link and, for each
// step its story concerns, the verdict the case's file states; and each of those steps' README
// names the case, under "Real libraries' bugs".
func TestCasesAreInTheReadme(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(casesDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, c := range readCases(t) {
		i := strings.Index(readme, "| ["+c.Name+"]("+c.Link+")")
		if i < 0 {
			t.Errorf("README.md has no row for %s linking %s", c.Name, c.Link)
			continue
		}
		row, _, _ := strings.Cut(readme[i:], "\n")
		for slug, want := range c.Expect {
			if !strings.Contains(row, slug+": "+verdictWords(want)) {
				t.Errorf("README.md's row for %s does not say %s: %s:\n%s", c.Name, slug, verdictWords(want), row)
			}
			b, err := os.ReadFile(filepath.Join("..", "..", "steps", slug, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			_, sec, _ := strings.Cut(string(b), "## Real libraries' bugs")
			if sec, _, _ = strings.Cut(sec, "\n## "); !strings.Contains(sec, "cases/"+c.Name+".json") {
				t.Errorf("steps/%s/README.md does not name %s under \"Real libraries' bugs\"", slug, c.Name)
			}
		}
	}
}

// verdictWords is a verdict as the museum's README says it: ✓, or the kinds joined by ", ".
func verdictWords(ks []vocab.Kind) string {
	if len(ks) == 0 {
		return "✓"
	}
	s := make([]string, len(ks))
	for i, k := range explore.Ordered(ks) {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}
