package tui

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
)

// A found program in the terminal lab: lab -program FILE opens the lab on the program lab explore
// -save wrote and plays its run. It replays the recorded run rather than playing the program
// again: each record of the saved history goes to a referee at its recorded time, slowed to the
// lab's pace, and the referee's events are drawn as a canned run's are (the feed, board.apply,
// rewind); the verdict is referee.JudgeCell of the same history, what lab judge gives. Played
// again on the wall clock the program could take another turn, and the verdict with it.

// Program is a found program, read from the file explore -save wrote (lab -program FILE).
type Program struct {
	File  string
	Step  *steps.Step // the step whose run it is
	Story []string    // the program in words, as explore printed it (explore.Program.Lines)
	// History is its run as explore played it, Others the run's other plays; Violations and
	// Unjudged the verdict the file records.
	History              *history.History
	Others               []*history.History
	Violations, Unjudged []vocab.Kind
}

// replay is one play of a program on the arena, at a pace.
type replay struct {
	*Program
	pace float64 // wall time per recorded time: the lab's TTL over the recorded run's
}

// playProgram stops any session and plays p's recorded run on the arena at the lab's pace.
func (m *model) playProgram(p *Program) tea.Cmd {
	m.stopSession()
	m.handoff, m.scr = nil, scrArena
	m.cur = slices.Index(m.steps, p.Step)
	h := p.History
	pace := m.slow
	if h.Timing.TTL > 0 {
		pace = float64(m.timing().TTL) / float64(h.Timing.TTL)
	}
	// explore plays on the embedded backend, whose lock server has a replica
	m.ar = newArena(steps.Scenario(h.Scenario), h.Timing, h.Stock, h.LockKey, h.Backend == "embedded", len(h.Nodes))
	if course.TakesNoLock(p.Step) {
		m.ar.takesNoLock()
	}
	m.ar.prog = &replay{Program: p, pace: pace}
	m.msg = fmt.Sprintf("playing the program in %s at the lab's pace (%s)…", p.File, speedText(m.slow))
	ctx, cancel := context.WithCancel(context.Background())
	f := newFeed(m.gen)
	s := &session{gen: m.gen, feed: f, cancel: cancel, ran: make(chan struct{}), start: time.Now(), pace: pace}
	m.sess = s
	go m.ar.prog.play(ctx, s.start, f, s.ran)
	return tea.Batch(f.next(), m.tick())
}

// play adds each record of the run to a referee at start plus its recorded time times the pace;
// what the referee says it means goes into f, as a canned run's arena puts it there. Then the
// verdict: referee.JudgeCell of the same history, lab judge's. ran is closed when it returns; the
// end of ctx stops it.
func (p *replay) play(ctx context.Context, start time.Time, f *feed, ran chan struct{}) {
	defer close(ran)
	var rep *referee.Report
	var err error
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the replay panicked: %v\n%s", r, debug.Stack())
		}
		f.finish(rep, err)
	}()
	h := p.History
	ref := referee.NewReferee(*h, f.push)
	t := time.NewTimer(0)
	defer t.Stop()
	for _, rec := range h.Records {
		if d := time.Until(start.Add(time.Duration(float64(rec.At) * p.pace))); d > 0 {
			t.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		ref.Add(rec)
	}
	rep = referee.JudgeCell(h, p.Others)
}

// verdict says what the replay's referee found, and whether it is the verdict the file records.
func (p *replay) verdict(rep *referee.Report, err error) string {
	if err != nil {
		return "the program could not be replayed: " + oneLine(err.Error())
	}
	now := course.Verdict(rep.Violations, rep.Unjudged)
	if rep.Differs(p.Violations, p.Unjudged) {
		return fmt.Sprintf("the program in %s, judged again: %s; the file records %s (lab judge %s says so too)", p.File, now, course.Verdict(p.Violations, p.Unjudged), p.File)
	}
	return fmt.Sprintf("the program in %s: %s, the verdict the file records (lab judge %s gives it too)", p.File, now, p.File)
}

// mode says the replay on the arena's first line.
func (p *replay) mode(done bool) string {
	h := p.History
	pace := fmt.Sprintf("%g× slower", p.pace)
	if p.pace == 1 {
		pace = "at the pace it was recorded at"
	}
	s := fmt.Sprintf("program %s: %s, recorded with TTL %s, played %s", p.File, h.What, roundDur(h.Timing.TTL), pace)
	if done {
		s = fmt.Sprintf("program %s, played: %s", p.File, h.What)
	}
	return s
}

// storyLines are the program in words, as explore printed it, wrapped in w columns.
func (p *replay) storyLines(w int) []string {
	var out []string
	for i, l := range p.Story {
		if i == 0 {
			l = sLabel.Render("PROGRAM") + " " + l
		} else {
			l = "  " + l
		}
		out = append(out, wrap(l, w)...)
	}
	return out
}

// lessonLines are what a played program leaves to read: no step's row covers an explored
// program, so no fix is named (as its page names none).
func (p *replay) lessonLines(st *steps.Step, rep *referee.Report, w int) []string {
	next := "Rewind with , and . (home, end); [ and ] play it again slower or faster; b breaks it with a scenario, r live buyers."
	switch {
	case rep == nil:
		return nil
	case len(rep.Violations) > 0:
		return wrap(sBad.Render(fmt.Sprintf("✗ %s broke under the program. ", course.Title(st)))+next, w)
	case !rep.Complete():
		return wrap(sWarn.Render(fmt.Sprintf("No verdict for %s under the program. ", course.Name(st)))+next, w)
	}
	return wrap(sGood.Render(fmt.Sprintf("%s held under the program. ", course.Title(st)))+next, w)
}
