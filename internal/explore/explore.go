package explore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/matrix"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/steps"
)

// Env names the environment variable that tells TestExplore what to explore: a Request as JSON.
const Env = "LOCKSTEP_EXPLORE"

// Request is what lab explore asks of TestExplore.
type Request struct {
	// Step is the catalog's slug of the step to explore; "" for the learner's package laid over
	// the test binary.
	Step string `json:"step,omitempty"`
	// Seed is the first program's seed; program i of the exploration is Generate(Seed+i).
	Seed   uint64        `json:"seed"`
	Budget time.Duration `json:"budget"` // wall time for playing programs (shrinking comes after)
	Buyers int           `json:"buyers"` // the most buyers a program has
	// Programs is the most programs to play (0: as many as Budget allows): a test counts programs,
	// not wall time, so that what it finds does not move with the machine's load.
	Programs int `json:"programs,omitempty"`
	// Faults are the moves a program may arm (nil: every one).
	Faults []history.Fault `json:"faults,omitempty"`
	// Kinds are the kinds a program is judged for (nil: every kind).
	Kinds []vocab.Kind `json:"kinds,omitempty"`
	// Out is the file the Result goes to, as JSON.
	Out string `json:"out"`
	// Pkg is the import path of the lock's package, whose frames name what a program that never
	// ends waits for.
	Pkg string `json:"pkg,omitempty"`
	// Hang is the wall time one program may take before the exploration ends, calling it hung
	// (0: programLimit).
	Hang time.Duration `json:"hang,omitempty"`
}

// programLimit is the wall time one program may take before the exploration calls it hung: a
// program plays in tens of milliseconds in a bubble; a lock whose goroutine spins without waiting,
// or waits for a sync.Mutex held across a round trip (the bubble's clock stops), never ends.
const programLimit = 60 * time.Second

// ShrinkTries is how many candidates Shrink may play: a program of 3 buyers and 2 faults shrinks
// in a few dozen.
const ShrinkTries = 300

// Result is what an exploration found.
type Result struct {
	Step      string `json:"step"`
	Seed      uint64 `json:"seed"`       // the first program's seed
	Programs  int    `json:"programs"`   // programs played before the first break (or in the budget)
	NoVerdict int    `json:"no_verdict"` // of those, how many had no verdict (a run past its deadline, a lock whose goroutines all waited before it could end)
	// WallClock is how many of those were played on the wall clock: a lock's sync.Mutex stopped
	// their bubble's clock.
	WallClock int           `json:"wall_clock,omitempty"`
	Simulated time.Duration `json:"simulated"` // their simulated time together
	Wall      time.Duration `json:"wall"`      // the wall time they took
	Found     *Found        `json:"found,omitempty"`
	// Err is why exploring stopped short (a backend that failed to start).
	Err string `json:"error,omitempty"`
}

// Found is a program that broke the lock, and the smallest one it shrank to.
type Found struct {
	Original Program `json:"original"` // as its seed wrote it
	Program  Program `json:"program"`  // shrunk
	// Way is how it broke the lock (the first kind of its verdict); the shrunk program breaks it
	// the same way.
	Way vocab.Kind `json:"way"`
	// Lines say the shrunk program in words, with what each fault said as it struck.
	Lines []string `json:"lines"`
	// Report is the shrunk program's run, judged: its verdict, the referee's sentences, its
	// history.
	Report *referee.Report `json:"report"`
	// OriginalViolations is the verdict of the program as its seed wrote it.
	OriginalViolations []vocab.Kind `json:"original_violations"`
	// After is the wall time from the start to the end of the program that broke the lock.
	After  time.Duration `json:"after"`
	Shrink int           `json:"shrink"` // the candidates Shrink played
}

// Progress is where an exploration stands: programs played, simulated and wall time so far, and
// while shrinking, the size reached.
type Progress struct {
	Programs  int           `json:"programs"`
	Simulated time.Duration `json:"simulated"`
	Wall      time.Duration `json:"wall"`
	// Shrinking is the program being shrunk's size in words ("" while exploring).
	Shrinking string `json:"shrinking,omitempty"`
}

// Explore plays st against the programs of req.Seed, req.Seed+1, … each in a bubble of its own
// until one breaks the lock, req.Budget of wall time is spent or req.Programs are played, then
// shrinks the one that broke it. progress is told after each program and each shrinking step.
// Hazard: a bubble that panics once its run has ended (a learner's lock whose goroutines outlive
// the run) keeps its verdict; one that panics before is a program without a verdict, not a break;
// one whose clock stops is left behind with its goroutines, and its program played on the wall
// clock.
func Explore(st *steps.Step, req Request, bubble matrix.Bubble, progress func(Progress)) Result {
	res := Result{Step: st.Slug, Seed: req.Seed}
	start := time.Now()
	l := Limits{Buyers: req.Buyers, Nodes: st.Nodes, Faults: req.Faults}
	var current atomic.Uint64 // the seed of the program playing now
	limit := cmp.Or(req.Hang, programLimit)
	watch := time.AfterFunc(limit, func() {
		seed := current.Load()
		WriteResult(req.Out, Result{Step: st.Slug, Seed: req.Seed, Err: fmt.Sprintf("the program of seed %d never ended (-seed %d plays it first): %s",
			seed, seed, matrix.Diagnose(matrix.AllStacks(), req.Pkg, false))})
		os.Exit(3)
	})
	defer watch.Stop()
	play := func(p Program) (*referee.Report, bool, error) {
		watch.Reset(limit)
		return playOne(st, p, req, bubble)
	}
	for seed := req.Seed; time.Since(start) < req.Budget && (req.Programs <= 0 || res.Programs < req.Programs); seed++ {
		p := Generate(seed, l)
		current.Store(seed)
		rep, wall, err := play(p)
		if wall {
			res.WallClock++
		}
		if err != nil {
			res.Err = err.Error()
			return res
		}
		res.Programs++
		res.Wall = time.Since(start)
		if rep == nil || !rep.Complete() {
			res.NoVerdict++
		}
		if rep != nil {
			res.Simulated += Simulated(rep.History)
		}
		if progress != nil {
			progress(Progress{Programs: res.Programs, Simulated: res.Simulated, Wall: res.Wall})
		}
		way := Way(rep)
		if way == "" {
			continue
		}
		f := &Found{Original: p, Way: way, OriginalViolations: rep.Violations, After: res.Wall}
		last := rep
		f.Program, f.Shrink = Shrink(p, ShrinkTries, func(c Program) bool {
			r, _, err := play(c)
			if err != nil || Way(r) != way {
				return false
			}
			last = r
			if progress != nil {
				b, n := c.Size()
				progress(Progress{Programs: res.Programs, Simulated: res.Simulated, Wall: time.Since(start),
					Shrinking: vocab.Count(b, "buyer", "buyers") + ", " + vocab.Count(n, "fault", "faults")})
			}
			return true
		})
		// The last run that broke the lock is the shrunk program's: Shrink keeps each candidate
		// that breaks it, and the last it kept is what it returns.
		f.Report = last
		f.Lines = f.Program.Lines(Struck(last.History))
		res.Found = f
		return res
	}
	return res
}

// playOne plays p in a bubble of its own. A bubble that panics once the run has ended (a lock
// whose goroutines outlive it) keeps its verdict, with a note (matrix.Outlived); one that panics
// before (every goroutine waits for ever) is a program without a verdict. A bubble whose clock stops — a goroutine waits for a
// sync.Mutex another holds across a round trip, as steps 06–10 do when two requests of one process
// meet in Unlock — is left behind, as grade leaves it, and p is played again on the wall clock,
// with a note that says why.
func playOne(st *steps.Step, p Program, req Request, bubble matrix.Bubble) (rep *referee.Report, wall bool, err error) {
	if bubble == nil {
		rep, err = Run(st, p, req.Kinds, nil)
		return rep, false, err
	}
	type played struct {
		rep *referee.Report
		err error
	}
	done := make(chan played, 1)
	go func() {
		var pl played
		crash := ""
		guarded := func(f func()) {
			defer func() {
				if r := recover(); r != nil {
					crash = fmt.Sprint(r)
				}
			}()
			bubble(f)
		}
		pl.rep, pl.err = Run(st, p, req.Kinds, guarded)
		if crash != "" {
			// A run that ended keeps its verdict, its lock's goroutines left waiting named in a
			// note; one that could not end has none.
			pl.rep, _, _ = matrix.Outlived(pl.rep, pl.err, crash, req.Pkg)
		}
		done <- pl
	}()
	stop := make(chan struct{})
	defer close(stop)
	stall := make(chan string, 1)
	go matrix.Stalled(stop, func() { stall <- matrix.Diagnose(matrix.AllStacks(), req.Pkg, false) })
	select {
	case pl := <-done:
		return pl.rep, false, pl.err
	case why := <-stall:
		rep, err = Run(st, p, req.Kinds, nil)
		if rep != nil {
			rep.Notes = append(rep.Notes, "played on the wall clock, not in virtual time, where "+why)
		}
		return rep, true, err
	}
}

// WriteResult writes r to file as JSON.
func WriteResult(file string, r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}
