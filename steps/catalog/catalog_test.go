package catalog

import (
	"os"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/scenario"
)

// TestREADMEMatrixMatchesCatalog: the matrix a learner reads in README.md is the one the tests
// assert (each step's Expect), cell by cell, so the two cannot drift apart.
func TestREADMEMatrixMatchesCatalog(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), "|")
		if len(cells) != len(scenario.Names())+1 {
			continue
		}
		name := strings.TrimSpace(cells[0])
		if _, err := Find(name); err == nil && strings.Contains(name, "_") {
			rows[name] = cells[1:]
		}
	}
	for _, st := range Steps {
		row, ok := rows[st.Slug]
		if !ok {
			t.Errorf("README.md has no matrix row for %s", st.Slug)
			continue
		}
		for i, sc := range scenario.Names() {
			want := "✓"
			if ks := st.Expect[sc]; len(ks) > 0 {
				s := make([]string, len(ks))
				for j, k := range ks {
					s[j] = string(k)
				}
				want = strings.Join(s, ", ")
			}
			if got := strings.TrimSpace(row[i]); got != want {
				t.Errorf("%s under %s: README.md says %q, the catalog expects %q", st.Slug, sc, got, want)
			}
		}
	}
}

// TestFind accepts a number, a slug and a bare name, and refuses the rest with the choices.
func TestFind(t *testing.T) {
	for _, s := range []string{"4", "04", "04_atomic_ttl", "atomic_ttl"} {
		if st, err := Find(s); err != nil || st.Slug != "04_atomic_ttl" {
			t.Errorf("Find(%q) = %v, %v", s, st, err)
		}
	}
	for _, s := range []string{"", "99", "0", "atomic", "04_owner"} {
		if _, err := Find(s); err == nil {
			t.Errorf("Find(%q) found a step", s)
		}
	}
}
