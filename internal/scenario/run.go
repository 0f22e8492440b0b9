package scenario

import (
	"context"
	"fmt"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps"
)

// Run plays scenario name against cfg.Step on a fresh arena and returns the referee's report. A
// scenario that plays each gap of the holder's Unlock (unlock-race) is played once per gap: the
// report's verdict is every play's together, its History the first play that found a violation
// (else the first), its Others the rest, and Play and Plays say which it is of how many.
func Run(ctx context.Context, cfg arena.Config, name steps.Scenario) (*referee.Report, error) {
	sc := Find(name)
	if sc == nil {
		return nil, fmt.Errorf("%w %s", ErrUnknown, name)
	}
	return sc.Run(ctx, cfg)
}

// Run plays sc against cfg.Step: see the package's Run.
func (sc *Scenario) Run(ctx context.Context, cfg arena.Config) (*referee.Report, error) {
	if err := sc.needs(cfg.Env); err != nil {
		return nil, err
	}
	if err := lacking(ctx, cfg); err != nil {
		return nil, err
	}
	if !sc.EachGap {
		rep, _, err := sc.play(ctx, cfg, 1)
		return rep, err
	}
	var reps []*referee.Report
	var cmds []string
	n := 1 // the gaps to try: the most commands the holder's Unlock carried out that touched its lock
	for gap := 1; gap <= n; gap++ {
		rep, race, err := sc.play(ctx, cfg, gap)
		if err != nil {
			return nil, err
		}
		struck := ""
		if race != nil {
			n, struck = max(n, race.Touched()), race.Struck()
		}
		if gap > 1 && struck == "" {
			continue // this play's release went another way: there was no such gap in it
		}
		reps = append(reps, rep)
		if struck != "" {
			cmds = append(cmds, struck)
		}
		if struck == "" || rep.TimedOut != "" {
			break
		}
	}
	rep := referee.Merge(reps)
	switch {
	case len(cmds) == 1:
		rep.Notes = append(rep.Notes, fmt.Sprintf("buyer 1's release was one command (%s): the freeze could only come before it", cmds[0]))
	case len(cmds) > 1:
		var where []string
		for i, c := range cmds {
			where = append(where, fmt.Sprintf("the %s (%s)", arena.Ordinal(i+1), c))
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("buyer 1's Unlock touched its lock in %d commands: it was frozen before each in a play of its own, before %s", len(cmds), arena.JoinAnd(where)))
	}
	return rep, nil
}

// play plays sc's program once on a fresh arena: try is the play's number (the gap, for
// EachGap). It returns the report and what a freeze before an unlock command learned, if the
// program armed one.
func (sc *Scenario) play(ctx context.Context, cfg arena.Config, try int) (*referee.Report, *arena.UnlockRace, error) {
	base := unit(cfg)
	t, deadline := sc.timing(cfg)
	cfg.Timing = t
	cfg.Stock = sc.Stock
	if cfg.Stock == 0 {
		cfg.Stock = 3
	}
	cfg.Scenario, cfg.What, cfg.Judged = sc.Name, sc.What, sc.Judges
	if sc.EachGap {
		cfg.Play = try
	}
	a, err := arena.NewArena(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	if cfg.OnArena != nil {
		cfg.OnArena(a)
	}
	rctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	s := a.NewStage(rctx, try, base)
	sc.Play(s)
	timedOut := s.Finish(deadline, func() bool { return ctx.Err() != nil })
	cancel() // the staging ends with the run, before the report and before Close
	s.Close()
	if timedOut != "" {
		a.TimedOut(timedOut)
	} else {
		s.Unmet() // did the moves strike? If not, say why: no verdict, or (no lock) nothing to act on
	}
	return a.Report(context.WithoutCancel(ctx)), s.Race(), nil
}

// StallTries is how many plays the tests give a cell on the wall clock while the machine stalls
// them (Steady).
const StallTries = 5

// Steady plays name as Run does, and again while the machine stalled the run (arena.Stalled), at
// most tries plays in all: a verdict of the lock, not of the machine's load. It returns the last
// report and how many plays before it were stalled. For the tests and the headless commands on the wall
// clock; the terminal lab, which draws each event as it comes, plays once and says `?`.
func Steady(ctx context.Context, cfg arena.Config, name steps.Scenario, tries int) (*referee.Report, int, error) {
	cfg.WatchStalls = true // on the embedded backend's wall clock too (in a bubble there is none)
	for stalled := 0; ; stalled++ {
		rep, err := Run(ctx, cfg, name)
		if err != nil || !arena.Stalled(rep) || stalled+1 >= tries {
			return rep, stalled, err
		}
	}
}
