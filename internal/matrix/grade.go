package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/scenario"
	"github.com/lockstep-lab/lockstep/steps"
)

// Grading a learner's lock. lab grade DIR builds this package's test binary with one more file
// laid over it (go test -c -overlay) that hands the package in DIR to TestGrade, which calls
// Grade: the learner's row, played as the matrix plays a step's, every cell of the embedded
// backend in a testing/synctest bubble, so the grade is the same on a busy laptop as on an idle
// one. The row goes to the file $LOCKSTEP_GRADE_OUT names, as JSON (Graded); lab grade prints it.
//
// lab run and lab matrix play the embedded backend the same way: they build this package's test
// binary as it stands (or with the learner's package laid over it, in a lab built by lab -dir)
// and hand TestPlay the cells to play in the file $LOCKSTEP_PLAY names; PlayCells plays them,
// each in a bubble, and writes each cell's report (Plays) where $LOCKSTEP_GRADE_OUT says.

// GradeOut names the environment variable that tells TestGrade where to write its Graded, and
// TestPlay its Plays.
const GradeOut = "LOCKSTEP_GRADE_OUT"

// PlayIn names the environment variable that tells TestPlay which file holds the cells to play,
// as a JSON array of Want.
const PlayIn = "LOCKSTEP_PLAY"

// Want is a cell to play: a step's slug and a scenario.
type Want struct {
	Step     string         `json:"step"`
	Scenario steps.Scenario `json:"scenario"`
}

// Plays is what PlayCells played: each cell asked for, in the order asked, or why it stopped.
type Plays struct {
	Cells []Played `json:"cells"`
	// Hung says, in one line, which cell never ended, and what its goroutines waited for.
	Hung string `json:"hung,omitempty"`
}

// Played is one cell's play: its report (with its history), or the error that left it without
// one. Clock says which clock it played on (VirtualTime, WallClock).
type Played struct {
	Want
	Report *referee.Report `json:"report,omitempty"`
	Clock  string          `json:"clock,omitempty"`
	Err    string          `json:"error,omitempty"`
	// CannotStage says Err is arena.ErrCannotStage's: the backend cannot stage the scenario.
	CannotStage bool `json:"cannot_stage,omitempty"`
}

// Result is the cell's report and error as Play returned them in the grader: an error that was
// arena.ErrCannotStage's is again (errors.Is), with the same words.
func (p Played) Result() (*referee.Report, error) {
	switch {
	case p.CannotStage:
		return nil, &playedError{p.Err, arena.ErrCannotStage}
	case p.Err != "":
		return nil, errors.New(p.Err)
	}
	return p.Report, nil
}

// playedError is an error that crossed from the grader as words, and what it was.
type playedError struct {
	msg string
	is  error
}

func (e *playedError) Error() string { return e.msg }
func (e *playedError) Unwrap() error { return e.is }

// PlayCells plays every cell of want on backend, one after the other, each inside bubble where
// the backend is Virtual and guarded as Grade guards a learner's (a cell that never ends writes
// Plays.Hung and exits with status 3), and writes the Plays to out. find gives the step of a
// slug; a slug it does not know is an error, and nothing is played.
func PlayCells(want []Want, backend string, bubble Bubble, find func(string) (*steps.Step, error), out string) error {
	sts := make([]*steps.Step, len(want))
	for i, w := range want {
		st, err := find(w.Step)
		if err != nil {
			return err
		}
		sts[i] = st
	}
	play, stop := guard(backend, bubble, stepPkg, func(st *steps.Step, sc steps.Scenario, why string) {
		write(out, Plays{Hung: fmt.Sprintf("%s under %s: the run never ended: %s", st.Slug, sc, why)})
		os.Exit(3)
	})
	defer stop()
	done := make([]Played, 0, len(want))
	for i, w := range want {
		p := Played{Want: w}
		rep, clock, err := play(sts[i], w.Scenario)
		switch {
		case err != nil:
			p.Err, p.CannotStage = err.Error(), errors.Is(err, arena.ErrCannotStage)
		default:
			p.Report, p.Clock = rep, clock
		}
		done = append(done, p)
	}
	return write(out, Plays{Cells: done})
}

// stepPkg is the import path of st's package, read from its New: the frames Diagnose looks for.
func stepPkg(st *steps.Step) string {
	if st == nil || st.New == nil {
		return ""
	}
	name := runtime.FuncForPC(reflect.ValueOf(st.New).Pointer()).Name()
	slash := strings.LastIndex(name, "/") + 1
	if dot := strings.Index(name[slash:], "."); dot >= 0 {
		return name[:slash+dot]
	}
	return name
}

// Graded is what a grading found: the row, or why there is none.
type Graded struct {
	Row        []Cell `json:"row,omitempty"`
	Incomplete int    `json:"incomplete"`
	// Err is a cell that could not be played at all (a backend that failed to start).
	Err string `json:"error,omitempty"`
	// Hung says, in one line, how the learner's lock stopped a cell from ending at all.
	Hung string `json:"hung,omitempty"`
	// Reports are the played cells' reports, by scenario, each with its history and its other
	// plays' (a page of the grade draws them, and lab judge reads them back from it). A Cell
	// keeps its report out of JSON, so the row prints as matrix -json prints one.
	Reports map[string]*referee.Report `json:"reports,omitempty"`
}

// cellLimit is the wall time a cell may take before the grading calls it hung. A cell plays in
// well under a second of wall time in a bubble (the whole matrix: seconds), and a few seconds on
// the wall clock; a lock whose goroutine loops for ever without waiting keeps its cell from ever
// ending, on either clock.
const cellLimit = 60 * time.Second

// Grade plays st's row on backend, each cell inside bubble where the backend is Virtual, and
// writes the Graded to out. pkg is the import path of the learner's package, whose frames name
// the cause of a cell that could not end (see guard); a cell that outlasts cellLimit ends the
// grading, with its cause, and the process exits with status 3.
func Grade(st *steps.Step, backend, pkg string, bubble Bubble, out string) error {
	play, stop := guard(backend, bubble, func(*steps.Step) string { return pkg }, func(_ *steps.Step, sc steps.Scenario, why string) {
		write(out, Graded{Hung: fmt.Sprintf("%s: the run never ended: %s", sc, why)})
		os.Exit(3)
	})
	defer stop()
	var g Graded
	row, incomplete, err := Row(st, func(st *steps.Step, sc steps.Scenario) (*referee.Report, error) {
		rep, _, err := play(st, sc)
		return rep, err
	})
	g.Row, g.Incomplete = row, incomplete
	for _, c := range row {
		if c.Report != nil {
			if g.Reports == nil {
				g.Reports = map[string]*referee.Report{}
			}
			g.Reports[c.Scenario] = c.Report
		}
	}
	if err != nil {
		g.Err = err.Error()
	}
	return write(out, g)
}

// guard returns a play of one cell on backend, inside a bubble of its own where bubble is given
// and the backend is Virtual, and says which clock the cell played on (VirtualTime or WallClock,
// as the cell's own clock read at its start). pkgOf names the package whose frames name the
// cause of a cell that could not end:
//   - a bubble that panics because goroutines of the lock were still waiting once its run had
//     ended keeps its verdict, with a note naming what waited (Outlived); one whose goroutines
//     all waited before the run could end is a cell without a verdict, with that cause;
//   - a bubble whose clock stops (a goroutine waits for a sync.Mutex that another holds across a
//     sleep or a round trip: not a wait synctest can see through) is left behind, and the cell is
//     played again on the wall clock, with a note that says why;
//   - a cell that outlasts cellLimit of wall time calls hung with its cause, which must not
//     return (the cell's goroutines cannot be stopped): it writes what it can and exits.
//
// Hazard: call stop when every cell is played; until then a timer watches the cell playing now.
func guard(backend string, bubble Bubble, pkgOf func(*steps.Step) string, hung func(*steps.Step, steps.Scenario, string)) (play func(*steps.Step, steps.Scenario) (*referee.Report, string, error), stop func()) {
	type cell struct {
		st *steps.Step
		sc steps.Scenario
	}
	var cur atomic.Pointer[cell] // the cell playing now
	cur.Store(&cell{})
	watch := time.AfterFunc(cellLimit, func() {
		c := cur.Load()
		hung(c.st, c.sc, Diagnose(AllStacks(), pkgOf(c.st), false))
	})
	play = func(st *steps.Step, sc steps.Scenario) (*referee.Report, string, error) {
		cur.Store(&cell{st, sc})
		watch.Reset(cellLimit)
		if bubble == nil || !Virtual(backend) {
			rep, err := Play(st, sc, backend, nil)
			return rep, WallClock, err
		}
		type played struct {
			rep   *referee.Report
			clock string
			err   error
			stuck string // the panic of a bubble whose goroutines waited for ever
		}
		done := make(chan played, 1)
		go func() {
			var p played
			guarded := func(f func()) {
				defer func() {
					if r := recover(); r != nil {
						p.stuck = fmt.Sprint(r)
					}
				}()
				bubble(func() {
					p.clock = clockOf(time.Now())
					f()
				})
			}
			p.rep, p.err = Play(st, sc, backend, guarded)
			done <- p
		}()
		stop := make(chan struct{})
		defer close(stop)
		stall := make(chan string, 1)
		go Stalled(stop, func() { stall <- Diagnose(AllStacks(), pkgOf(st), false) })
		select {
		case p := <-done:
			if p.stuck != "" {
				rep, why, ok := Outlived(p.rep, p.err, p.stuck, pkgOf(st))
				if !ok {
					rep = stuckReport(st, sc, why)
				}
				return rep, p.clock, nil
			}
			return p.rep, p.clock, p.err
		case why := <-stall:
			// The bubble's goroutines stay where they are, for good; its Redis is its own.
			rep, err := Play(st, sc, backend, nil)
			if rep != nil {
				rep.Notes = append(rep.Notes, "played on the wall clock, not in virtual time, where "+why)
			}
			return rep, WallClock, err
		}
	}
	return play, func() { watch.Stop() }
}

// The clocks a cell plays on, as Played.Clock says them.
const (
	VirtualTime = "virtual time"
	WallClock   = "the wall clock"
)

// clockOf says which clock t, a cell's time.Now() at its start, was read from (arena.VirtualClock).
func clockOf(t time.Time) string {
	if arena.VirtualClock(t) {
		return VirtualTime
	}
	return WallClock
}

// Stalled calls found once the newest bubble cannot go on: at once (two dumps a tenth of a second
// apart) when every goroutine of it is durably blocked or waits for a sync.Mutex or RWMutex
// (deadlocked: the holder waits on the bubble's clock, which a mutex's waiter keeps from
// advancing, as a lock that holds its mutex across a round trip does when two requests of one
// process meet), else once its goroutines have not moved for stallLimit dumps: the same
// goroutines in the same frames. A bubble that runs, however slowly on a loaded machine, changes
// between dumps.
func Stalled(stop <-chan struct{}, found func()) {
	tick := time.NewTicker(stallTick)
	defer tick.Stop()
	last, same, locked := "", 0, 0
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := newestBubble(AllStacks())
		if now != "" && now == last {
			same++
		} else {
			same = 0
		}
		if now != "" && deadlocked(now) {
			locked++
		} else {
			locked = 0
		}
		last = now
		if same >= stallLimit || locked >= 2 {
			found()
			return
		}
	}
}

// stallTick is how often Stalled dumps the goroutines.
const stallTick = time.Second / 10

// deadlocked says whether every goroutine of bubble (newestBubble's dump) is durably blocked or
// waits for a mutex, and one at least for a mutex: none can move again, since the bubble's clock
// advances only once every goroutine is durably blocked, and a mutex's waiter is not.
func deadlocked(bubble string) bool {
	mutex := false
	for _, g := range strings.Split(bubble, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		state, _, _ := strings.Cut(head[strings.Index(head, "[")+1:], "]")
		switch {
		case strings.Contains(state, "(durable)"):
		case strings.HasPrefix(state, "sync.Mutex.Lock"), strings.HasPrefix(state, "sync.RWMutex.Lock"), strings.HasPrefix(state, "sync.RWMutex.RLock"):
			mutex = true
		default:
			return false
		}
	}
	return mutex
}

// stallLimit is how many dumps stallTick apart must find the newest bubble unchanged before its
// clock has stopped (2 s).
const stallLimit = 20

// newestBubble is the part of a dump of every goroutine that belongs to the newest bubble.
func newestBubble(stacks string) string {
	latest, parts := 0, map[int][]string{}
	for _, g := range strings.Split(stacks, "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if b := bubbleOf.FindStringSubmatch(head); b != nil {
			n, _ := strconv.Atoi(b[1])
			latest = max(latest, n)
			parts[n] = append(parts[n], g)
		}
	}
	return strings.Join(parts[latest], "\n\n")
}

// Outlived keeps the report of a run whose bubble panicked (crash, the panic's words) once it had
// played: a run that ended in time with its report (rep, played without err), whose lock's
// goroutines were still waiting when the bubble ended, is judged, with a note naming what waited
// (the arena ends every stray that sends a command; one that waits for ever cannot be ended). ok
// is false for a run that could not end, or ran past its deadline (orders deaf to their context):
// it has no verdict, and why says what waited. pkg names the frames of the lock's package.
func Outlived(rep *referee.Report, err error, crash, pkg string) (kept *referee.Report, why string, ok bool) {
	ended := strings.Contains(crash, "exited")
	why = Diagnose(AllStacks(), pkg, ended)
	if !ended || rep == nil || err != nil || rep.TimedOut != "" {
		return nil, why, false
	}
	rep.Notes = append(rep.Notes, "the run ended and is judged, but "+why)
	return rep, why, true
}

// stuckReport is the report of a cell whose run could not end: every kind its scenario judges
// is unjudged, and why says what waited.
func stuckReport(st *steps.Step, sc steps.Scenario, why string) *referee.Report {
	return &referee.Report{Step: st.Slug, Scenario: string(sc), Violations: []steps.Kind{},
		Unjudged: scenario.Judges(sc), TimedOut: why}
}

func write(out string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// AllStacks is a dump of every goroutine.
func AllStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

var (
	goroutineHead = regexp.MustCompile(`^goroutine \d+ \[([^\]]*)\]:$`)
	bubbleOf      = regexp.MustCompile(`synctest bubble (\d+)`)
)

// PerProcessDir is the folder, inside a learner's, where lab grade lays a copy of its package for
// each process, where it has package-level state (steps.Step.PerProcess): p0, p1…, each a package
// of its own. Diagnose names a frame of a copy as the learner's own.
const PerProcessDir = "zz_per_process"

// copyOf is a copy's part of a frame's name: "/zz_per_process/p3".
var copyOf = regexp.MustCompile(`/` + PerProcessDir + `/p\d+`)

// Diagnose names, in one line, what the goroutines of pkg (an import path, or a package below it:
// its copies too) in stacks (a dump of every goroutine) were doing: the first frame of pkg in each goroutine that has one, and what
// that goroutine was waiting for. ended says the run had ended and these goroutines were left
// over. Hazard: it reads runtime.Stack's text, which Go does not promise to keep; a dump it cannot
// read still gives a sentence, without the frames.
func Diagnose(stacks, pkg string, ended bool) string {
	type found struct {
		state, fn, at string
		bubble        int
	}
	var seen []found
	latest := 0 // goroutines left over by an earlier cell belong to older bubbles
	for _, g := range strings.Split(stacks, "\n\n") {
		lines := strings.Split(strings.TrimSpace(g), "\n")
		m := goroutineHead.FindStringSubmatch(lines[0])
		if m == nil {
			continue
		}
		state, bubble := m[1], 0
		if b := bubbleOf.FindStringSubmatch(state); b != nil {
			bubble, _ = strconv.Atoi(b[1])
			latest = max(latest, bubble)
		}
		for i := 1; i+1 < len(lines); i += 2 {
			fn := copyOf.ReplaceAllString(strings.TrimSpace(lines[i]), "")
			if !strings.HasPrefix(fn, pkg+".") {
				continue
			}
			at := strings.TrimSpace(lines[i+1])
			if j := strings.LastIndex(at, " +0x"); j >= 0 {
				at = at[:j]
			}
			if j := strings.LastIndex(at, "/"); j >= 0 {
				at = at[j+1:]
			}
			if k := strings.LastIndex(fn, "("); k > 0 {
				fn = fn[:k] // drop the arguments: "lock.(*Locker).Lock(0xc000…, …)"
			}
			seen = append(seen, found{state, strings.TrimPrefix(fn, pkg[:strings.LastIndex(pkg, "/")+1]), at, bubble})
			break
		}
	}
	if latest > 0 {
		seen = slices.DeleteFunc(seen, func(f found) bool { return f.bubble != latest })
	}
	if len(seen) == 0 {
		if ended {
			return "goroutines were still waiting after the run had ended, none of them in your package's code"
		}
		return "the run's clock stopped, and no goroutine of your package's code was found waiting"
	}
	f := seen[0]
	f.state = strings.TrimSpace(strings.Split(f.state, ",")[0])
	what := describeState(f.state)
	more := ""
	if len(seen) > 1 {
		more = fmt.Sprintf(" (and %d more goroutines of your lock)", len(seen)-1)
	}
	switch {
	case strings.HasPrefix(f.state, "sync.Mutex.Lock"), strings.HasPrefix(f.state, "sync.RWMutex"):
		return fmt.Sprintf("%s at %s waits for a sync.Mutex%s that another goroutine holds across a wait (a Redis call, a sleep): virtual time cannot pass while a goroutine waits for a sync.Mutex (a one-slot channel as a mutex can)", f.fn, f.at, more)
	case f.state == "running" || f.state == "runnable":
		return fmt.Sprintf("%s at %s never waits%s: a loop that neither sleeps nor sends a command keeps the clock from moving; pause between tries", f.fn, f.at, more)
	case ended:
		return fmt.Sprintf("%s at %s was still %s when the run had ended%s: a Lock or Unlock that does not return when its context ends, or a goroutine not started with Proc.Go, outlives its request", f.fn, f.at, what, more)
	}
	return fmt.Sprintf("%s at %s is %s%s, and so is every other goroutine of the run: nothing can wake it", f.fn, f.at, what, more)
}

// describeState says a goroutine's wait reason in words.
func describeState(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(strings.Split(s, ",")[0]), " (durable)")
	switch {
	case strings.HasPrefix(s, "chan receive"):
		return "waiting to receive from a channel"
	case strings.HasPrefix(s, "chan send"):
		return "waiting to send on a channel"
	case strings.HasPrefix(s, "select"):
		return "waiting in a select"
	case strings.HasPrefix(s, "sleep"):
		return "sleeping"
	case strings.HasPrefix(s, "sync.WaitGroup"):
		return "waiting for a sync.WaitGroup"
	}
	return "waiting (" + s + ")"
}
