package referee

import (
	"compress/gzip"
	"encoding/json"
	"os"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Cell is one saved cell of the matrix: a step played under a scenario on the embedded backend in
// virtual time, the verdict it earned, and every play's history. internal/scenario's
// TestSaveCells writes them (go test ./internal/scenario -run TestSaveCells -save-cells); this
// package judges them again, with no Redis, no arena and no clock, as porcupine keeps its
// test_data.
type Cell struct {
	Step       string             `json:"step"`
	Scenario   vocab.Scenario     `json:"scenario"`
	Violations []vocab.Kind       `json:"violations"`
	Unjudged   []vocab.Kind       `json:"unjudged"`
	History    *history.History   `json:"history"`
	Others     []*history.History `json:"others,omitempty"`
}

// CellsDir is where the saved cells are, relative to this package.
const CellsDir = "testdata/cells"

// ReadCell reads a saved cell (gzipped JSON).
func ReadCell(file string) (*Cell, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var c Cell
	if err := json.NewDecoder(z).Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}
