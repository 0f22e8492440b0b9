package steptest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// tokens are the locks' random owner tokens (hex, or base32 from rand.Text) in a history's JSON.
var tokens = regexp.MustCompile(`[0-9a-f]{32}|[A-Z2-7]{26}`)

// Canonical is h's records as JSON lines, in their order, each random token named by its first
// appearance: two plays of the same drive session's moves are the same history when these are
// equal. Left out: the end-of-run probe's (buyer 0's) orders, calls and commands, and from its
// first on, the lock nodes' command numbers (Seq): on a lock that pauses a random back-off
// between tries (10–16, the aspect: math/rand/v2, which nobody can seed), the probe's tries land
// when its draws say, and how many there are; its finding, and everything the buyers did, is kept.
func Canonical(t testing.TB, h *history.History) string {
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

// FirstDiff is the first line two texts differ at, with its number.
func FirstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n  %s\n  %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("one has %d lines, the other %d", len(la), len(lb))
}
