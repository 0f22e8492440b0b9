// Package matrix plays the steps × scenarios matrix: one cell is one scenario played against one
// step on a fresh backend, and a row is every scenario against one step. The lab's headless
// commands, the grading of a learner's lock and the tests all play their cells here, so they judge
// alike.
package matrix

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
)

// Cell is one entry of the matrix, as -json prints it. Skipped says why a cell was not played
// (the backend lacks what its scenario needs); Unjudged lists the kinds the referee could not
// judge, with Why; Explain is the referee's sentence for each violation.
type Cell struct {
	Step       string            `json:"step"`
	Scenario   string            `json:"scenario"`
	Violations []steps.Kind      `json:"violations"`
	Explain    []referee.Finding `json:"explain,omitempty"`
	Skipped    string            `json:"skipped,omitempty"`
	Unjudged   []steps.Kind      `json:"unjudged,omitempty"`
	Why        string            `json:"why,omitempty"`
	// Notes says what of the scenario did not happen as staged, or how the cell was played.
	Notes []string `json:"notes,omitempty"`
	// Report is the referee's report of the cell, its history with it (nil when skipped).
	Report *referee.Report `json:"-"`
}

// Bubble runs a function inside a testing/synctest bubble (a test's synctest.Test), or nil to run
// it on the wall clock. Only a test can make one: Go has virtual time under go test alone.
type Bubble func(f func())

// Virtual reports whether backend (a -redis value or $LAB_REDIS) lives in this process, so that a
// cell of it can play inside a bubble: the embedded backend.
func Virtual(backend string) bool { return backend == "" || backend == "embedded" }

// Play plays sc against st on a fresh env of backend, inside bubble when one is given and the
// backend is Virtual; on the wall clock of a real server, again while the machine stalls the run
// (scenario.Steady). A scenario the backend cannot stage is arena.ErrCannotStage. Hazard: inside
// a bubble, the backend is opened and closed inside it, and every goroutine the run starts must
// end with it (arena.Run ends its own; a learner's lock may not, and the bubble panics).
func Play(st *steps.Step, sc steps.Scenario, backend string, bubble Bubble) (rep *referee.Report, err error) {
	play := func() {
		var env redisenv.Env
		env, err = redisenv.Open(backend, redisenv.Options{Nodes: st.Nodes})
		if err != nil {
			return
		}
		defer env.Close()
		var stalled int
		rep, stalled, err = scenario.Steady(context.Background(), arena.Config{Step: st, Env: env}, sc, scenario.StallTries)
		if stalled > 0 && rep != nil {
			again := "once more"
			if stalled > 1 {
				again = fmt.Sprintf("%d more times", stalled)
			}
			rep.Notes = append(rep.Notes, "played "+again+": the machine stalled the run longer than its margins")
		}
	}
	if bubble != nil && Virtual(backend) {
		bubble(play)
	} else {
		play()
	}
	return rep, err
}

// CellError is a cell that could not be played at all (the backend failed to start, say).
type CellError struct {
	Step     string
	Scenario steps.Scenario
	Err      error
}

func (e *CellError) Error() string { return fmt.Sprintf("%s under %s: %v", e.Step, e.Scenario, e.Err) }
func (e *CellError) Unwrap() error { return e.Err }

// Row plays every scenario against st through play, one after the other, and returns its row of
// cells and how many of them have no verdict. A scenario the backend cannot stage (or a topology
// it cannot give) is a skipped cell, not an error; any other error stops the row (a *CellError).
func Row(st *steps.Step, play func(*steps.Step, steps.Scenario) (*referee.Report, error)) (row []Cell, incomplete int, err error) {
	for _, sc := range scenario.Names() {
		rep, err := play(st, sc)
		c := Cell{Step: st.Slug, Scenario: string(sc), Violations: []steps.Kind{}}
		switch {
		case errors.Is(err, arena.ErrCannotStage):
			c.Skipped = err.Error()
		case errors.Is(err, redisenv.ErrSingleNode):
			c.Skipped = fmt.Sprintf("an existing server is one lock node, and %s needs %d", st.Slug, st.Nodes)
		case err != nil:
			return nil, 0, &CellError{Step: st.Slug, Scenario: sc, Err: err}
		default:
			c = CellOf(rep)
			c.Step, c.Scenario = st.Slug, string(sc)
			if !rep.Complete() {
				incomplete++
			}
		}
		row = append(row, c)
	}
	return row, incomplete, nil
}

// CellOf is the cell of a played report: its verdict, the referee's sentences, what it could not
// judge and why, and the report itself.
func CellOf(rep *referee.Report) Cell {
	c := Cell{Step: rep.Step, Scenario: rep.Scenario, Violations: rep.Violations, Explain: rep.Explain, Notes: rep.Notes, Report: rep}
	if !rep.Complete() {
		c.Unjudged, c.Why = rep.Unjudged, rep.Why()
	}
	return c
}
