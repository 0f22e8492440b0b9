package referee

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestJudgeSavedCells judges every saved cell again: the same violations, the same kinds it
// could not judge, from the histories alone.
func TestJudgeSavedCells(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(CellsDir, "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no saved cells in %s: go test ./internal/scenario -run TestSaveCells -save-cells writes them", CellsDir)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json.gz"), func(t *testing.T) {
			t.Parallel()
			c, err := ReadCell(file)
			if err != nil {
				t.Fatal(err)
			}
			rep := JudgeCell(c.History, c.Others)
			if !slices.Equal(orNone(rep.Violations), orNone(c.Violations)) || !slices.Equal(orNone(rep.Unjudged), orNone(c.Unjudged)) {
				t.Errorf("%s × %s: played %v (unjudged %v), judged again %v (unjudged %v)\n%s",
					c.Step, c.Scenario, c.Violations, c.Unjudged, rep.Violations, rep.Unjudged, rep.Text())
			}
		})
	}
}
