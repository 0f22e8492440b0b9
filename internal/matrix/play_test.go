package matrix_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// TestPlayCells: the cells PlayCells plays come back in the order asked, each played in virtual
// time (its clock read at its start is a bubble's), with the catalog's verdict and a report that
// crosses JSON whole: its history judged again gives the same words. An unknown step plays
// nothing.
func TestPlayCells(t *testing.T) {
	bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
	want := []matrix.Want{{Step: "08_watchdog", Scenario: steps.Slow}, {Step: "04_atomic_ttl", Scenario: steps.Slow}, {Step: "08_watchdog", Scenario: steps.Pause}}
	out := filepath.Join(t.TempDir(), "plays.json")
	if err := matrix.PlayCells(want, "", bubble, catalog.Find, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var ps matrix.Plays
	if err := json.Unmarshal(b, &ps); err != nil {
		t.Fatal(err)
	}
	if len(ps.Cells) != len(want) || ps.Hung != "" {
		t.Fatalf("got %d cells (hung %q), want %d", len(ps.Cells), ps.Hung, len(want))
	}
	for i, p := range ps.Cells {
		if p.Want != want[i] {
			t.Errorf("cell %d is %v, want %v", i, p.Want, want[i])
		}
		rep, err := p.Result()
		if err != nil {
			t.Fatalf("%v: %v", p.Want, err)
		}
		st, _ := catalog.Find(p.Step)
		exp := st.Expect[p.Scenario]
		if exp == nil {
			exp = []steps.Kind{}
		}
		if p.Clock != matrix.VirtualTime || !rep.Complete() || !slices.Equal(rep.Violations, exp) {
			t.Errorf("%v: on %s, %v (complete %v), want virtual time and %v", p.Want, p.Clock, rep.Violations, rep.Complete(), exp)
		}
		if rep.History == nil || len(rep.History.Records) == 0 {
			t.Errorf("%v: no history came back", p.Want)
		}
	}
	err = matrix.PlayCells([]matrix.Want{{Step: "99", Scenario: steps.Slow}}, "", bubble, catalog.Find, out)
	if err == nil {
		t.Error("an unknown step played")
	}
}

// TestPlayedResult: an error that crossed from the grader is the error it was, in the same words.
func TestPlayedResult(t *testing.T) {
	p := matrix.Played{Err: "sim: no replica to fail over to", CannotStage: true}
	if _, err := p.Result(); !errors.Is(err, arena.ErrCannotStage) || err.Error() != p.Err {
		t.Errorf("cannot stage: got %v", err)
	}
	p = matrix.Played{Err: "redis: the server would not start"}
	if _, err := p.Result(); err == nil || errors.Is(err, arena.ErrCannotStage) || err.Error() != p.Err {
		t.Errorf("another error: got %v", err)
	}
}
