package steptest

import (
	"os"
	"path/filepath"
	"testing"
)

// here runs Here in a subtest from the folder steps/name of a scratch tree and returns the step
// it found (nil) and whether the subtest skipped.
func here(t *testing.T, name string) (slug string, skipped bool) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "steps", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var sub *testing.T
	t.Run(name, func(t *testing.T) {
		sub = t
		if st := Here(t); st != nil {
			slug = st.Slug
		}
	})
	return slug, sub.Skipped()
}

// TestHere: a step's own folder is that step, by its exact slug; a learner's folder beside the
// steps — a copy named anything else, even a step's bare name — skips, so go test ./... stays
// green, and is never played as the catalog's step.
func TestHere(t *testing.T) {
	t.Setenv("LAB_STRICT", "")
	if slug, skipped := here(t, "09_lua_unlock"); slug != "09_lua_unlock" || skipped {
		t.Errorf("steps/09_lua_unlock: got %q, skipped %v", slug, skipped)
	}
	for _, name := range []string{"mine", "lua_unlock", "09"} {
		if slug, skipped := here(t, name); slug != "" || !skipped {
			t.Errorf("steps/%s: got %q, skipped %v; want a skip", name, slug, skipped)
		}
	}
}
