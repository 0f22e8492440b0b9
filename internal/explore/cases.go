package explore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Case is a named program from a reported bug of a real Redis lock library, with the report's
// link and its story: a file of the museum in cases/ (README.md there lists them). Any lock can be
// played against it (lab explore -program cases/NAME.json STEP|DIR) to see whether it has the bug.
// Hazard: the lab plays the story with its own moves; where the story needs what the moves cannot
// do (a read lock, two callbacks of one client racing), Played says what is played instead.
type Case struct {
	Name  string `json:"name"`  // the file's name without .json: "redisson-7272"
	Title string `json:"title"` // the bug in a few words: "the watchdog renews after unlock"
	Link  string `json:"link"`  // the report
	// Story is the report's story in two lines: what the library did, and what went wrong.
	Story []string `json:"story"`
	// Played says what the lab plays of it, and what it cannot.
	Played string `json:"played"`
	// Bug are the kinds that say a lock has the bug: any of them in the verdict.
	Bug []vocab.Kind `json:"bug"`
	// Judged are the kinds its program is judged for (nil: CaseKinds).
	Judged []vocab.Kind `json:"judged,omitempty"`
	// Expect is the verdict of each step the story concerns under Program, by slug: the kinds
	// violated (none: ✓), as README.md states it.
	Expect  map[string][]vocab.Kind `json:"expect"`
	Program Program                 `json:"program"`
}

// CaseKinds are the kinds a case is judged for unless it says otherwise: what a story of a lock
// gone wrong is about (two let in, another's lock undone, the shop stopped selling), not how busy a
// lock keeps Redis meanwhile (flood, idle, starved: a spinning lock floods while a lock nobody can
// take sits there).
var CaseKinds = append(slices.Clone(Safety), vocab.Stuck, vocab.LostSales)

// Kinds is what c's program is judged for: Judged, else CaseKinds.
func (c *Case) Kinds() []vocab.Kind {
	if c.Judged != nil {
		return c.Judged
	}
	return CaseKinds
}

// ReadCase reads a case from file. Hazard: anything but a case, with a program and the kinds of
// its bug, is an error.
func ReadCase(file string) (*Case, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var c Case
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	switch {
	case c.Name == "" || len(c.Program.Buyers) == 0:
		return nil, fmt.Errorf("%s is not a case: no name or no program", file)
	case len(c.Bug) == 0:
		return nil, fmt.Errorf("%s: the case names no kind that shows its bug", file)
	}
	for _, k := range c.Bug {
		if !slices.Contains(vocab.Kinds, k) && k != ForeignRenewal {
			return nil, fmt.Errorf("%s: no kind %q", file, k)
		}
	}
	return &c, nil
}

// IsCase reports whether the JSON in b is a case (it has a name and a bug), not a bare program.
func IsCase(b []byte) bool {
	var probe struct {
		Name string          `json:"name"`
		Bug  json.RawMessage `json:"bug"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Name != "" && probe.Bug != nil
}

// Has reports whether rep, a run of the case's program, shows the bug; an error when it has no
// verdict on its kinds.
func (c *Case) Has(rep *referee.Report) (bool, error) {
	if rep == nil {
		return false, errors.New("the program had no run")
	}
	for _, k := range c.Bug {
		if slices.Contains(rep.Unjudged, k) {
			return false, fmt.Errorf("no verdict on %s: %s", k, rep.Why())
		}
	}
	for _, k := range c.Bug {
		if slices.Contains(rep.Violations, k) {
			return true, nil
		}
	}
	return false, nil
}

// Heading is the case in one line: "redisson-7272: the watchdog renews after unlock".
func (c *Case) Heading() string { return c.Name + ": " + c.Title }

// BugWords is the bug's kinds in words: "stuck or lost-sales".
func (c *Case) BugWords() string {
	s := make([]string, len(c.Bug))
	for i, k := range c.Bug {
		s[i] = string(k)
	}
	return strings.Join(s, " or ")
}
