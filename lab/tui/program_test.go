package tui

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/lab/course"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// foundProgram is a program explore finds in step 04, as lab -program loads what explore -save
// wrote (the lab package's test holds the file to that): the shrunk program in words, its run and
// verdict. A count of programs, not a budget of wall time, so it finds the same one on any
// machine.
func foundProgram(t *testing.T) *Program {
	t.Helper()
	st, err := catalog.Find("04")
	if err != nil {
		t.Fatal(err)
	}
	req := explore.Request{Seed: 1, Budget: time.Minute, Buyers: 3, Programs: 200, First: true}
	res := explore.Explore(st, req, func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }, nil)
	if len(res.Map) == 0 {
		t.Fatalf("explore did not break 04 in %d programs", res.Programs)
	}
	rep := res.Map[0].Report
	return &Program{File: filepath.Join("found", "04.json"), Step: st, Story: res.Map[0].Program.Lines(explore.Struck(rep.History)),
		History: rep.History, Others: rep.Others, Violations: rep.Violations, Unjudged: rep.Unjudged}
}

// TestProgramFromExplore plays in the lab a program explore found in step 04.
func TestProgramFromExplore(t *testing.T) {
	p := foundProgram(t)
	if len(p.Story) < 2 || !strings.HasPrefix(p.Story[1], "buyer 1: ") {
		t.Fatalf("the program in words: %q", p.Story)
	}
	t.Run("replays to judge's verdict", func(t *testing.T) { replaysToJudgesVerdict(t, p) })
	t.Run("says a verdict that differs", func(t *testing.T) { saysAVerdictThatDiffers(t, p) })
}

// replaysToJudgesVerdict: lab -program on what explore -save wrote opens the arena on its step,
// shows the program in explore's words, plays the recorded run no faster than it was recorded (at
// -speed 1), and ends on the verdict lab judge gives the file, kind by kind, said to be the one the
// file records; then , home and . rewind it as after b.
func replaysToJudgesVerdict(t *testing.T, p *Program) {
	want := referee.JudgeCell(p.History, p.Others)
	file := p.File
	recorded := p.History.Records[len(p.History.Records)-1].At
	start := time.Now()
	fm, v := runTeaModel(t, newModel(Options{offline: true, Slow: 1, Program: p}), 100, 40, "the verdict the file records")
	if took := time.Since(start); took < recorded {
		t.Errorf("the recorded run of %v played in %v: not at the lab's pace", recorded, took)
	}
	a := fm.ar
	if a == nil || a.rep == nil || !a.done {
		t.Fatalf("no finished replay on the arena:\n%s", v)
	}
	if len(want.Violations) == 0 || a.rep.Differs(want.Violations, want.Unjudged) {
		t.Errorf("the lab's verdict %v (unjudged %v), lab judge's %v (unjudged %v)", a.rep.Violations, a.rep.Unjudged, want.Violations, want.Unjudged)
	}
	flatV := strings.Join(strings.Fields(v), " ")
	wants := []string{"Step 4/", "program " + file, "PROGRAM " + p.Story[0], "✗ Step 4 broke under the program", "the verdict the file records"}
	for _, l := range p.Story[1:] {
		wants = append(wants, l)
	}
	wants = append(wants, invariantMarks(steps.Kinds, want.Violations)...)
	for _, w := range wants {
		if !strings.Contains(flatV, w) {
			t.Errorf("the view lacks %q:\n%s", w, v)
		}
	}
	if strings.Contains(v, "the fix is") {
		t.Errorf("an explored program names a fix, which no step's row covers:\n%s", v)
	}
	press(fm, ",")
	press(fm, "home")
	if v := flat(fm); !strings.Contains(v, "◀▶ 1/") || !strings.Contains(v, "buyer ") || !strings.Contains(v, "PROGRAM ") {
		t.Errorf("home in rewind: want the first event, the program still in sight:\n%s", fm.View())
	}
	press(fm, ".")
	if v := flat(fm); !strings.Contains(v, "◀▶ 2/") {
		t.Errorf(". in rewind: want the second event:\n%s", fm.View())
	}
}

// saysAVerdictThatDiffers: when the file records another verdict than the referee gives its
// history now, the lab shows the referee's, and says the file's beside it.
func saysAVerdictThatDiffers(t *testing.T, found *Program) {
	want := referee.JudgeCell(found.History, found.Others)
	p := *found
	p.Violations = []steps.Kind{steps.Stuck}
	fm, _ := runTeaModel(t, newModel(Options{offline: true, Slow: 1, Program: &p}), 100, 30, "judged again: ") // the status line wraps where the file name puts it
	if !slices.Equal(fm.ar.rep.Violations, want.Violations) || !strings.Contains(fm.msg, "judged again: "+course.KindList(want.Violations)) || !strings.Contains(fm.msg, "the file records stuck") {
		t.Errorf("the lab says %q with the verdict %v; lab judge's %v", fm.msg, fm.ar.rep.Violations, want.Violations)
	}
}
