package drive_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/lockstep-lab/lockstep/internal/drive"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/steps/catalog"
	"go.uber.org/goleak"
)

// session plays moves (as lab drive -moves reads them) on step slug in a bubble of t, and returns
// what each move said, the session's report, and the violations the referee announced.
func session(t *testing.T, slug, moves string) (said [][]string, rep *referee.Report, found []drive.Found) {
	t.Helper()
	st, err := catalog.Find(slug)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := drive.Parse(moves)
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		s, err := drive.Open(drive.Config{Step: st}, synctest.Wait)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			w, err := s.Play(m)
			if err != nil {
				t.Logf("move %d (%s): %v", i+1, m.Key, err)
				continue
			}
			if os.Getenv("LANES") != "" {
				for _, l := range s.Lanes() {
					w = append(w, "    ~ "+l.String())
				}
				w = append(w, "    ~ "+s.Lock())
			}
			said = append(said, w)
		}
		found = s.Found()
		rep = s.End()
	})
	return said, rep, found
}

// tokens are the locks' random owner tokens (hex, or base32 from rand.Text) in a history's JSON.
var tokens = regexp.MustCompile(`[0-9a-f]{32}|[A-Z2-7]{26}`)

// canonical is h's records as JSON lines, in their order, each token named by its first
// appearance: two plays of the same moves are the same history when these are equal. Left out:
// the end-of-run probe's (buyer 0's) orders, calls and commands, and from its first on, the lock
// nodes' command numbers (Seq): on a lock that pauses a random back-off between tries (10–16, the
// aspect: math/rand/v2, which nobody can seed), the probe's tries land when its draws say, and
// how many there are; its finding, and everything the buyers did, is kept.
func canonical(t *testing.T, h *history.History) string {
	t.Helper()
	names := map[string]string{}
	var out strings.Builder
	probing := false
	for _, r := range h.Records {
		if r.Buyer == 0 && (r.Kind == history.RecCmd || r.Kind == history.RecCall || r.Kind == history.RecOrder || r.Kind == history.RecLapse) {
			probing = true
			continue
		}
		if probing && r.Kind == history.RecCmd {
			r.Seq = 0
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(tokens.ReplaceAllStringFunc(string(b), func(s string) string {
			if _, ok := names[s]; !ok {
				names[s] = fmt.Sprintf("token%d", len(names)+1)
			}
			return names[s]
		}) + "\n")
	}
	return out.String()
}

func noLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// TestEverySolutionReachesItsGoal: every step's par solution, played, makes the referee find the
// challenge's goal (17's does not: it holds), and played again gives the same history, record for
// record.
func TestEverySolutionReachesItsGoal(t *testing.T) {
	noLeak(t)
	for _, st := range catalog.Steps {
		ch, ok := catalog.ChallengeOf(st.Slug)
		if !ok {
			t.Errorf("%s has no challenge", st.Slug)
			continue
		}
		t.Run(st.Slug, func(t *testing.T) {
			_, rep, found := session(t, st.Slug, ch.Solution)
			reached := slices.ContainsFunc(found, func(f drive.Found) bool { return f.Kind == ch.Goal }) || slices.Contains(rep.Violations, ch.Goal)
			if reached == ch.Holds {
				t.Errorf("%s: %q reached %s: %v (found %v, verdict %v)", st.Slug, ch.Solution, ch.Goal, reached, found, rep.Violations)
			}
			_, again, _ := session(t, st.Slug, ch.Solution)
			if a, b := canonical(t, rep.History), canonical(t, again.History); a != b {
				t.Errorf("%s: the same moves gave two histories:\n%s", st.Slug, firstDiff(a, b))
			}
		})
	}
}

// firstDiff is the first line two texts differ at, with its number.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("one has %d lines, the other %d", len(la), len(lb))
}
