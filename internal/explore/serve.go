package explore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// Serve is the TestExplore that lab explore and lab grade run in internal/matrix's test binary, the
// grader (where grade played the learner's row: one build for both; a downloaded lab's packed
// grader explores a step). It explores what the Request in $LOCKSTEP_EXPLORE asks — the
// catalog's step it names, else learner, the lock laid over the binary, whose import path is pkg —
// each program in a bubble, says where it stands on stderr (a Progress as JSON a line) and writes
// the Result to the Request's file. Hazard: it runs in a test binary only (bubble is a
// testing/synctest bubble), and a bubble whose clock a lock stopped is left behind there with its
// goroutines.
func Serve(learner *steps.Step, pkg string, bubble matrix.Bubble) error {
	env := os.Getenv(Env)
	if env == "" {
		return errors.New("$" + Env + " is empty: lab explore and lab grade set it")
	}
	var req Request
	if err := json.Unmarshal([]byte(env), &req); err != nil {
		return fmt.Errorf("$%s: %v", Env, err)
	}
	st := learner
	req.Pkg = pkg
	if req.Step != "" {
		var err error
		if st, err = catalog.Find(req.Step); err != nil {
			return err
		}
		req.Pkg = "github.com/lockstep-lab/lockstep/steps/" + st.Slug
	}
	if st == nil {
		return fmt.Errorf("$%s names no step, and no learner's lock was laid over this binary", Env)
	}
	enc := json.NewEncoder(os.Stderr)
	res := Explore(st, req, bubble, func(p Progress) { enc.Encode(p) })
	return WriteResult(req.Out, res)
}
