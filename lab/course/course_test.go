package course

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// row makes a step descriptor with one row of the matrix: scenario → kinds.
func row(n int, title string, expect map[steps.Scenario][]steps.Kind) *steps.Step {
	return &steps.Step{Slug: fmt.Sprintf("%02d_x", n), Number: n, Title: title, Claim: "claim", Fixes: "fixes",
		Breaks: "breaks", Hint: "hint", Lesson: "lesson", BreakWith: steps.Slow, Expect: expect}
}

// TestHandoffNamesTheStepThatClears: the fix is the first later step whose row clears every kind
// that broke this one; the next step is the fix only when it is; with none, it says so.
func TestHandoffNamesTheStepThatClears(t *testing.T) {
	ov, os, fr := steps.Overlap, steps.Oversold, steps.ForeignRelease
	slow := steps.Slow
	all := []*steps.Step{
		row(1, "one", map[steps.Scenario][]steps.Kind{slow: {ov, os, fr}}),
		row(2, "two", map[steps.Scenario][]steps.Kind{slow: {ov, os}}),
		row(3, "three", map[steps.Scenario][]steps.Kind{slow: {ov, os}}),
		row(4, "four", nil),
		row(5, "five", map[steps.Scenario][]steps.Kind{slow: {ov}}),
	}
	h := NewHandoff(all, 0, slow, []steps.Kind{ov, os, fr}, nil)
	if h.Next != 1 || h.Fix != 3 || !slices.Equal(h.Clears, []steps.Kind{fr}) {
		t.Fatalf("from 1: next %d, fix %d, clears %v", h.Next, h.Fix, h.Clears)
	}
	if s := h.Sentence(all); s != "Step 2 clears foreign-release, not overlap, oversold; the fix is step 4 (four): press 4 for its diff." {
		t.Errorf("from 1: %q", s)
	}
	if s := NewHandoff(all, 1, slow, []steps.Kind{ov, os}, nil).Sentence(all); s != "Step 3 does not clear overlap, oversold under slow; the fix is step 4 (four): press 4 for its diff." {
		t.Errorf("from 2: %q", s)
	}
	if s := NewHandoff(all, 2, slow, []steps.Kind{ov}, nil).Sentence(all); s != "The fix: step 4 (four) clears overlap under slow — press → for its diff." {
		t.Errorf("from 3: %q", s)
	}
	if h := NewHandoff(all, 4, slow, []steps.Kind{ov}, nil); h.Next != -1 || h.Fix != -1 || !strings.HasPrefix(h.Sentence(all), "No later step clears overlap under slow") {
		t.Errorf("from the last: %+v %q", h, h.Sentence(all))
	}
	if s := NewHandoff(all, 4, steps.Failover, []steps.Kind{ov}, nil).Sentence(all); !strings.Contains(s, "no lock on one Redis survives a failover") {
		t.Errorf("failover: %q", s)
	}
}

// TestHandoffFromTheCatalog: the catalog's own rows send step 4 (slow) to step 8 and step 5
// (unlock-race) to step 9, not to the step after them; the steps whose next step clears them are
// sent there.
func TestHandoffFromTheCatalog(t *testing.T) {
	all := catalog.Steps
	// 0: no later step clears it (9, 12 and 14 break under failover or pause, which no lock on
	// one Redis survives); 07 floods under load until 10's back-off, 10 idles under load until
	// 13's pub/sub, 11's partition is 12's to fix.
	// With 15–17 in the catalog: Redlock (15) survives one node's failover; only 17, which takes no
	// lock, clears pause.
	has15, has17 := ByNumber(all, 15) >= 0, ByNumber(all, 17) >= 0
	fixOr := func(fix int, there bool) int {
		if there {
			return fix
		}
		return 0
	}
	for _, c := range []struct{ from, fix int }{{1, 2}, {2, 3}, {3, 4}, {4, 8}, {5, 9}, {6, 7}, {7, 10}, {8, 9},
		{9, fixOr(15, has15)}, {10, 13}, {11, 12}, {12, fixOr(17, has17)}, {13, 14}, {14, fixOr(17, has17)}} {
		i := ByNumber(all, c.from)
		if i < 0 {
			continue // not in the catalog (yet)
		}
		st := all[i]
		h := NewHandoff(all, i, st.BreakWith, st.Expect[st.BreakWith], nil)
		got := 0
		if h.Fix >= 0 {
			got = all[h.Fix].Number
		}
		if got != c.fix {
			t.Errorf("step %d under %s: fix step %d, want step %d", c.from, st.BreakWith, got, c.fix)
		}
	}
	// 12 under pause: the fencing step clears oversold on the way (the resource refuses the stale
	// write), and the sentence names it; 17, no lock at all, clears both.
	if i := ByNumber(all, 12); i >= 0 && has17 && ByNumber(all, 16) >= 0 {
		h := NewHandoff(all, i, steps.Pause, all[i].Expect[steps.Pause], nil)
		if h.Part < 0 || all[h.Part].Number != 16 || !slices.Equal(h.PartKinds, []steps.Kind{steps.Oversold}) {
			t.Errorf("12 under pause: on the way %d %v, want step 16 clearing oversold", h.Part, h.PartKinds)
		}
		if s := h.Sentence(all); !strings.Contains(s, "step 16 (") || !strings.Contains(s, "clears oversold") || !strings.Contains(s, "the fix is step 17") {
			t.Errorf("12 under pause: %q", s)
		}
	}
	// The side road beside 04 broke under clock-skew: its base, 04, does not; the sentence says so.
	for i, st := range all {
		if st.Slug != "side_getset" {
			continue
		}
		h := NewHandoff(all, i, st.BreakWith, st.Expect[st.BreakWith], nil)
		if s := h.Sentence(all); h.Base < 0 || !strings.HasPrefix(s, "The fix is to go back: its base, step 4") || !strings.Contains(s, "(press 4)") {
			t.Errorf("the side road under %s: base %d, %q", st.BreakWith, h.Base, s)
		}
	}
}

// TestACopyIsItsStepBySource: the terminal lab's way on for a copy of 09 starts from 09, found by
// its source, as lab grade's starts from 09, found by its row: under greedy, "as step 9 does" and
// step 14, not "as step 15 does" and step 16.
func TestACopyIsItsStepBySource(t *testing.T) {
	st9, _ := catalog.Find("09")
	mine := LearnerStep("steps/mine", 1, st9.New, st9.Order, st9.Source, nil)
	all := append(slices.Clone(catalog.Steps), mine)
	near := NearestBySource(all, mine)
	if near < 0 || all[near] != st9 {
		t.Fatalf("a copy of 09 is nearest %v by its source", near)
	}
	s := NewHandoffNear(all, len(all)-1, steps.Greedy, []steps.Kind{steps.Starved}, mine, near).Sentence(all)
	if !strings.Contains(s, "it breaks as step 9 (") || !strings.Contains(s, "the fix is step 14 (") {
		t.Errorf("a copy of 09 under greedy: %q", s)
	}
}
