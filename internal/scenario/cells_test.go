package scenario_test

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/internal/steptest"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

var saveCells = flag.Bool("save-cells", false, "play every cell and write it to internal/referee/testdata/cells")

// TestSaveCells plays every step under every scenario on the embedded backend in virtual time and
// writes each cell — its verdict, the catalog's, and every play's history — to the referee's
// testdata, where TestJudgeSavedCells judges them again from the histories alone. Without
// -save-cells it checks that every cell of the catalog has its file.
func TestSaveCells(t *testing.T) {
	dir := filepath.Join("..", "referee", referee.CellsDir)
	for _, st := range catalog.Steps {
		for _, sc := range scenario.All() {
			file := filepath.Join(dir, st.Slug+"__"+string(sc.Name)+".json.gz")
			if !*saveCells {
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s × %s has no saved cell (go test ./internal/scenario -run TestSaveCells -save-cells): %v", st.Slug, sc.Name, err)
				}
				continue
			}
			if os.Getenv("LAB_REDIS") != "" {
				t.Skip("cells are saved from the embedded backend in virtual time")
			}
			rep, err := steptest.Play(t, st, sc.Name)
			if errors.Is(err, arena.ErrCannotStage) {
				continue
			}
			if err != nil {
				t.Fatalf("%s × %s: %v", st.Slug, sc.Name, err)
			}
			if want := st.Expect[sc.Name]; !slices.Equal(rep.Violations, want) && len(want)+len(rep.Violations) > 0 {
				t.Fatalf("%s × %s: found %v, the matrix expects %v: not saved", st.Slug, sc.Name, rep.Violations, want)
			}
			c := referee.Cell{Step: st.Slug, Scenario: sc.Name, Violations: rep.Violations, Unjudged: rep.Unjudged,
				History: rep.History, Others: rep.Others}
			if err := writeCell(file, &c); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func writeCell(file string, c *referee.Cell) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	z, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err := json.NewEncoder(z).Encode(c); err != nil {
		f.Close()
		return err
	}
	if err := z.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestSavedCellsKnowWhetherTheyLock: the saved cells were written before a history's header said
// NoLock; read back, each play's history takes no lock exactly where its step takes none.
// Hazard: the rule that reads an old history (no Lock call recorded: no lock) is what tells a
// peek from a read of a lock-free step in every run saved before it.
func TestSavedCellsKnowWhetherTheyLock(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "referee", referee.CellsDir, "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no saved cells: %v", err)
	}
	for _, file := range files {
		c, err := referee.ReadCell(file)
		if err != nil {
			t.Fatal(err)
		}
		st, err := catalog.Find(c.Step)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, h := range append([]*history.History{c.History}, c.Others...) {
			if h.NoLock != st.NoLock {
				t.Errorf("%s × %s: read as NoLock %v, the step's is %v", c.Step, c.Scenario, h.NoLock, st.NoLock)
			}
		}
	}
}

// TestAnOldHistoryIsJudgedForItsScenario: a history of format 0 without "judged" (written before
// histories carried what their scenario judges) is read with its scenario's sentence and kinds as
// the catalog says them today, and judged for them; one of this format is read as it says.
// Hazard: read with no kinds, an old crash run would be judged for nothing and pass.
func TestAnOldHistoryIsJudgedForItsScenario(t *testing.T) {
	old := `{"step":"05_owner","scenario":"crash","records":[]}`
	var h history.History
	if err := json.Unmarshal([]byte(old), &h); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Judged, scenario.Crash.Judges) || h.What != scenario.Crash.What || h.Format != 0 {
		t.Errorf("format 0 read as judged %v, what %q, format %d: want %v, %q, 0", h.Judged, h.What, h.Format, scenario.Crash.Judges, scenario.Crash.What)
	}
	var now history.History
	if err := json.Unmarshal([]byte(`{"format":1,"step":"05_owner","scenario":"crash","records":[]}`), &now); err != nil {
		t.Fatal(err)
	}
	if now.Judged != nil || now.What != "" {
		t.Errorf("format 1 read as judged %v, what %q: want it as written", now.Judged, now.What)
	}
}
