package explore

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
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
	Budget time.Duration `json:"budget"` // wall time for playing programs (shrinking comes on top)
	Buyers int           `json:"buyers"` // the most buyers a program has
	// Programs is the most programs to play (0: as many as Budget allows): a test counts programs,
	// not wall time, so that what it finds does not move with the machine's load.
	Programs int `json:"programs,omitempty"`
	// Faults are the faults a program may have (nil: every one; empty: none). Hazard: not
	// omitempty, or an empty list would arrive as nil, every fault.
	Faults []history.Fault `json:"faults"`
	// Kinds are the kinds a program is judged for (nil: every kind).
	Kinds []vocab.Kind `json:"kinds,omitempty"`
	// First stops at the first program that breaks the lock, shrunk for the first kind of its
	// verdict, where exploring otherwise goes on for the budget and maps every kind it finds.
	First bool `json:"first,omitempty"`
	// Check plays each program found (or given) twice more and compares the two histories,
	// record by record (Result.Differs).
	Check bool `json:"check,omitempty"`
	// Play are programs to play as they are, in place of exploring (lab explore -replay,
	// -program): each is played once, judged, and said (Result.Played).
	Play []Program `json:"play,omitempty"`
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
	Programs  int    `json:"programs"`   // programs played (in the budget, or to the first break with First)
	NoVerdict int    `json:"no_verdict"` // of those, how many had no verdict (a run past its deadline, a lock whose goroutines all waited before it could end)
	// WallClock is how many of those were played on the wall clock: a lock's sync.Mutex stopped
	// their bubble's clock.
	WallClock int           `json:"wall_clock,omitempty"`
	Simulated time.Duration `json:"simulated"` // their simulated time together
	Wall      time.Duration `json:"wall"`      // the wall time they took
	// Map is every kind the programs broke the lock with, each with the smallest program found
	// that shows it: safety kinds first (Safety), then the others in the referee's order.
	Map []*Found `json:"map,omitempty"`
	// Played are the programs the Request gave, each as it was played (Request.Play).
	Played []*Found `json:"played,omitempty"`
	// Checked is how many programs Check played twice; Differs, the first whose two plays told
	// two stories, and where ("" when every one told one).
	Checked int    `json:"checked,omitempty"`
	Differs string `json:"differs,omitempty"`
	// Err is why exploring stopped short (a backend that failed to start).
	Err string `json:"error,omitempty"`
}

// Broke is the map's findings that are breaks: all but the refusals the lab's own node fault
// caused (Found.Safe).
func (r Result) Broke() []*Found {
	var out []*Found
	for _, f := range r.Map {
		if f.Safe == "" {
			out = append(out, f)
		}
	}
	return out
}

// Found is a kind a program broke the lock with, the program that first showed it, and the
// smallest it shrank to that still shows it; or a program played as given (Request.Play).
type Found struct {
	// Kind is the kind it was shrunk for; for a program played as given, the first of its
	// verdict (Way), "" when it broke nothing.
	Kind vocab.Kind `json:"kind,omitempty"`
	// Nth is the program of the exploration that first showed it (1: the first).
	Nth      int     `json:"nth,omitempty"`
	Original Program `json:"original"` // as its seed wrote it
	Program  Program `json:"program"`  // shrunk
	// Lines say the shrunk program in words, with what each fault said as it struck.
	Lines []string `json:"lines"`
	// Report is the shrunk program's run, judged: its verdict, the referee's sentences, its
	// history.
	Report *referee.Report `json:"report"`
	// OriginalViolations is the verdict of the program as its seed wrote it.
	OriginalViolations []vocab.Kind `json:"original_violations"`
	// After is the wall time from the start to the end of the program that first showed it.
	After  time.Duration `json:"after"`
	Shrink int           `json:"shrink"` // the candidates Shrink played
	// Recovery is how the shrunk program's quiet tail went, for a stuck or lost-sales (nil for
	// other kinds, or where the tail ordered nothing).
	Recovery *Recovery `json:"recovery,omitempty"`
	// Safe says why a lost-sales is the lock refusing safely after the lab's own node fault (its
	// program without that fault sells), not a break; "" for a break.
	Safe string `json:"safe,omitempty"`
	// Wall: the program was played on the wall clock (a lock's sync.Mutex stopped its bubble's
	// clock), so it is neither shrunk (each try would take seconds, and time on the wall clock
	// is not the same twice) nor checked record by record.
	Wall bool `json:"wall,omitempty"`
}

// Progress is where an exploration stands: programs played, simulated and wall time so far, and
// while shrinking, the kind and the size reached.
type Progress struct {
	Programs  int           `json:"programs"`
	Simulated time.Duration `json:"simulated"`
	Wall      time.Duration `json:"wall"`
	// Found is how many kinds the map has so far.
	Found int `json:"found,omitempty"`
	// Shrinking is the program being shrunk's kind and size in words ("" while exploring).
	Shrinking string `json:"shrinking,omitempty"`
}

// explorer is one exploration under way: its request, its step, its watch on a program that never
// ends, and what it has found.
type explorer struct {
	st       *steps.Step
	req      Request
	bubble   matrix.Bubble
	progress func(Progress)
	start    time.Time
	searched time.Duration // wall time spent playing the search's own programs (the budget's)
	current  atomic.Uint64 // the seed of the program playing now
	watch    *time.Timer
	limit    time.Duration
	res      Result
}

// Explore plays st against the programs of req.Seed, req.Seed+1, … each in a bubble of its own,
// for req.Budget of wall time (or req.Programs programs), and maps every kind they break it with:
// the first program to show a kind is shrunk to the smallest that still shows it. With req.First
// it stops at the first program that breaks the lock. With req.Play it plays those programs
// instead. With req.Check each program it found or played is played twice more, and the two runs
// compared. progress is told after each program and each shrinking step. Hazard: a bubble that
// panics once its run has ended (a learner's lock whose goroutines outlive the run) keeps its
// verdict; one that panics before is a program without a verdict, not a break; one whose clock
// stops is left behind with its goroutines, and its program played on the wall clock.
func Explore(st *steps.Step, req Request, bubble matrix.Bubble, progress func(Progress)) Result {
	x := &explorer{st: st, req: req, bubble: bubble, progress: progress, start: time.Now(),
		limit: cmp.Or(req.Hang, programLimit), res: Result{Step: st.Slug, Seed: req.Seed}}
	x.watch = time.AfterFunc(x.limit, func() {
		seed := x.current.Load()
		WriteResult(req.Out, Result{Step: st.Slug, Seed: req.Seed, Err: fmt.Sprintf("the program of seed %d never ended (-seed %d plays it first): %s",
			seed, seed, matrix.Diagnose(matrix.AllStacks(), req.Pkg, false))})
		os.Exit(3)
	})
	defer x.watch.Stop()
	var err error
	if len(req.Play) > 0 {
		err = x.playGiven()
	} else {
		err = x.search()
	}
	if err == nil && req.Check {
		err = x.check()
	}
	if err != nil {
		x.res.Err = err.Error()
	}
	return x.res
}

// play plays p, the watch reset for it.
func (x *explorer) play(p Program) (*referee.Report, bool, error) {
	x.watch.Reset(x.limit)
	return playOne(x.st, p, x.req, x.bubble)
}

// tell tells progress where the exploration stands.
func (x *explorer) tell(shrinking string) {
	if x.progress != nil {
		x.progress(Progress{Programs: x.res.Programs, Simulated: x.res.Simulated, Wall: time.Since(x.start), Found: len(x.res.Map), Shrinking: shrinking})
	}
}

// search plays the programs of the seeds from req.Seed on, and maps what they break.
func (x *explorer) search() error {
	l := Limits{Buyers: x.req.Buyers, Nodes: x.st.Nodes, Faults: x.req.Faults}
	for seed := x.req.Seed; x.searched < x.req.Budget && (x.req.Programs <= 0 || x.res.Programs < x.req.Programs); seed++ {
		p := Generate(seed, l)
		x.current.Store(seed)
		began := time.Now()
		rep, wall, err := x.play(p)
		x.searched += time.Since(began)
		if wall {
			x.res.WallClock++
		}
		if err != nil {
			return err
		}
		x.res.Programs++
		x.res.Wall = time.Since(x.start)
		if rep == nil || !rep.Complete() {
			x.res.NoVerdict++
		}
		if rep != nil {
			x.res.Simulated += Simulated(rep.History)
		}
		x.tell("")
		if Way(rep) == "" {
			continue
		}
		kinds := Ordered(rep.Violations)
		if x.req.First {
			kinds = kinds[:1]
		}
		for _, k := range kinds {
			i := slices.IndexFunc(x.res.Map, func(f *Found) bool { return f.Kind == k })
			switch {
			case i >= 0 && (wall || !x.res.Map[i].Wall):
				continue
			case i >= 0: // found on the wall clock first: a program in virtual time is better
				x.res.Map = slices.Delete(x.res.Map, i, i+1)
			}
			if wall {
				f := &Found{Kind: k, Nth: x.res.Programs, Original: p, Program: p, Report: rep, OriginalViolations: rep.Violations, After: time.Since(x.start), Wall: true}
				x.judge(f)
				x.add(f)
				continue
			}
			x.add(x.shrink(k, p, rep))
		}
		if x.req.First {
			return nil
		}
	}
	return nil
}

// shrink shrinks p, whose run rep shows k, to the smallest program that still shows k. It starts
// from the smallest program of the map that shows k already, if one does (a kind found beside
// another in one verdict), else from p.
func (x *explorer) shrink(k vocab.Kind, p Program, rep *referee.Report) *Found {
	f := &Found{Kind: k, Nth: x.res.Programs, Original: p, OriginalViolations: rep.Violations, After: time.Since(x.start)}
	from, last := p, rep
	for _, g := range x.res.Map {
		if !g.Wall && slices.Contains(g.Report.Violations, k) {
			from, last = g.Program, g.Report
			break
		}
	}
	f.Program, f.Shrink = Shrink(from, ShrinkTries, func(c Program) bool {
		r, wall, err := x.play(c)
		if err != nil || wall || !Shows(r, k) {
			return false // a try on the wall clock is no smaller program: it is not the same twice
		}
		last = r
		b, n := c.Size()
		x.tell(fmt.Sprintf("%s, %s, %s", k, vocab.Count(b, "buyer", "buyers"), vocab.Count(n, "fault", "faults")))
		return true
	})
	// The last run that showed k is the shrunk program's: Shrink keeps each candidate that shows
	// it, and the last it kept is what it returns (or from itself, when none was smaller).
	f.Report = last
	x.judge(f)
	return f
}

// judge fills in what f's run says beyond its verdict: its program in words, how its quiet tail
// went (for a stuck or lost-sales), and whether a lost-sales is a safe refusal after the lab's own
// node fault: the same program without that fault sells.
func (x *explorer) judge(f *Found) {
	f.Lines = f.Program.Lines(Struck(f.Report.History))
	if !slices.ContainsFunc(f.Report.Violations, liveness) {
		return
	}
	f.Recovery = RecoveryOf(f.Program, f.Report.History)
	if k := Way(f.Report); f.Kind != vocab.LostSales && k != vocab.LostSales || slices.ContainsFunc(f.Report.Violations, Safe) {
		return
	}
	if q, had := withoutNodeMoves(f.Program); had {
		if r, _, err := x.play(q); err == nil && r != nil && r.Complete() && !slices.Contains(r.Violations, vocab.LostSales) {
			f.Safe = safeWords(f.Program)
		}
	}
}

// add puts f in the map, in its kind's place.
func (x *explorer) add(f *Found) {
	x.res.Map = append(x.res.Map, f)
	slices.SortStableFunc(x.res.Map, func(a, b *Found) int { return cmp.Compare(rank(a.Kind), rank(b.Kind)) })
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
