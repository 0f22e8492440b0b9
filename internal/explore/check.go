package explore

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// The same story every time, as madsim's check mode runs each seed twice and fails at the first
// divergence: a program found is worth keeping only if it plays to the same history again.

// playGiven plays the programs the request gave, each once, and says each as found.
func (x *explorer) playGiven() error {
	for i, p := range x.req.Play {
		rep, wall, err := x.play(p)
		if err != nil {
			return err
		}
		if wall {
			x.res.WallClock++
		}
		x.res.Programs++
		f := &Found{Nth: i + 1, Original: p, Program: p, Report: rep, Lines: p.Lines(nil), Wall: wall}
		if rep != nil {
			x.res.Simulated += Simulated(rep.History)
			f.Kind, f.OriginalViolations = Way(rep), rep.Violations
			x.judge(f)
		}
		if rep == nil || !rep.Complete() {
			x.res.NoVerdict++
		}
		x.res.Played = append(x.res.Played, f)
		x.tell("")
	}
	x.res.Wall = time.Since(x.start)
	return nil
}

// check plays each program of the map (or each given) twice more, and compares the two histories
// record by record: Result.Differs says the first program whose two plays differ, and where.
func (x *explorer) check() error {
	fs := x.res.Map
	if len(x.req.Play) > 0 {
		fs = x.res.Played
	}
	for _, f := range fs {
		if f.Wall {
			continue // the wall clock is not the same twice: it says so (Found.Wall)
		}
		a, wa, err := x.play(f.Program)
		if err != nil {
			return err
		}
		b, wb, err := x.play(f.Program)
		if err != nil {
			return err
		}
		if wa || wb {
			f.Wall = true
			continue
		}
		x.res.Checked++
		x.tell("")
		what := "program " + fmt.Sprint(f.Nth)
		if f.Kind != "" && len(x.req.Play) == 0 {
			what = "the " + string(f.Kind) + " program"
		}
		switch {
		case a == nil || b == nil:
			x.res.Differs = what + " had no run to compare: its bubble panicked"
		case !slices.Equal(a.Violations, b.Violations) || !slices.Equal(a.Unjudged, b.Unjudged):
			x.res.Differs = fmt.Sprintf("%s was judged %v, then %v; %s", what, verdict(a.Violations, a.Unjudged), verdict(b.Violations, b.Unjudged), Differ(a.History, b.History))
		default:
			if d := Differ(a.History, b.History); d != "" {
				x.res.Differs = what + " played two histories: " + d
			}
		}
		if x.res.Differs != "" {
			return nil
		}
	}
	return nil
}

// verdict is a verdict in words, for Differs.
func verdict(v, unjudged []vocab.Kind) string {
	switch {
	case len(unjudged) > 0:
		return fmt.Sprintf("? (no verdict on %v)", unjudged)
	case len(v) == 0:
		return "✓"
	}
	return fmt.Sprint(v)
}

// tokens are what a lock draws at random for itself (owner tokens, request ids: hex, UUIDs, or
// base32 from crypto/rand.Text): two histories are one story when they differ in these alone,
// each drawn at the same place.
var tokens = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|[A-Z2-7]{26}`)

// Canonical is h's records as JSON, a record a line, each random token named by its first
// appearance ("token1"…), and the records of one simulated instant in the order of their text:
// goroutines runnable at one instant (a buyer and the idle probe) race, and the arena records what
// each did in the order they ran.
func Canonical(h *history.History) []string {
	names := map[string]string{}
	type line struct {
		at   time.Duration
		text string
	}
	lines := make([]line, 0, len(h.Records))
	for _, r := range h.Records {
		b, err := json.Marshal(r)
		if err != nil {
			b = []byte(err.Error())
		}
		lines = append(lines, line{r.At, tokens.ReplaceAllStringFunc(string(b), func(s string) string {
			if _, ok := names[s]; !ok {
				names[s] = fmt.Sprintf("token%d", len(names)+1)
			}
			return names[s]
		})})
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return strings.Compare(a.text, b.text)
	})
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

// Differ says where two histories first differ, canonically (Canonical): "" when they do not.
func Differ(a, b *history.History) string {
	ca, cb := Canonical(a), Canonical(b)
	for i := range min(len(ca), len(cb)) {
		if ca[i] != cb[i] {
			return fmt.Sprintf("record %d of %d differs:\n  %s\n  %s", i+1, len(ca), ca[i], cb[i])
		}
	}
	if len(ca) != len(cb) {
		return fmt.Sprintf("one has %d records, the other %d", len(ca), len(cb))
	}
	return ""
}
