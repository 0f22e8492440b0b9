// Package drive is drive mode: the learner is the scheduler. Time stands still and every buyer's
// next Redis command waits at the stage (arena.Gate, in each process's network) until the learner
// sends it; time passes only when they let it (a quarter TTL at a time); the fault keys strike the
// buyer they choose. A drive session is a program whose next move comes from the learner: it
// plays in virtual time, in a testing/synctest bubble of the grader (Serve), with its moves fed
// from outside the bubble, so the bubble's clock — miniredis's TTLs, and a lock's own time.Since,
// tickers and sleeps — stands still while the learner thinks. The moves are the only source of
// order: the same moves give the same history, and undo is the session played again with one
// move fewer.
package drive

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/scenario"
)

// The keys of a move that are not a buyer's number or a fault's.
const (
	KeyWait  = "w" // let time pass: a quarter TTL
	KeyBuyer = "+" // another buyer starts an order
	KeySkew  = "k" // another buyer starts an order, its wall clock 3 × TTL ahead (clock-skew)
)

// MaxBuyers is the most buyers a session has: each answers to one digit key.
const MaxBuyers = 9

// Move is one move of a drive session: a buyer's number sends that buyer's next command; w lets a
// quarter TTL pass; + and k put another buyer on the stage with an order; a fault key (a
// scenario's, as the live arena has them: e x s u n p f i t y) strikes the buyer it names.
type Move struct {
	Key string `json:"key"`
	// Buyer is the buyer it acts on: for a number, that buyer; for a fault key, the buyer chosen
	// when it was pressed (the last number, or 1).
	Buyer int `json:"buyer,omitempty"`
}

// Send is the move that sends buyer n's next command.
func Send(n int) Move { return Move{Key: fmt.Sprint(n), Buyer: n} }

// Wait is the move that lets a quarter TTL pass.
func Wait() Move { return Move{Key: KeyWait} }

// sends reports whether m sends a buyer's command.
func (m Move) sends() bool { return len(m.Key) == 1 && m.Key[0] >= '1' && m.Key[0] <= '9' }

// Fault is the scenario whose key m is, nil if it is none.
func (m Move) Fault() *scenario.Scenario { return FaultOf(m.Key) }

// FaultOf is the scenario whose live key is key, nil if none is.
func FaultOf(key string) *scenario.Scenario {
	for _, sc := range scenario.Keyed() {
		if sc.Key == key {
			return sc
		}
	}
	return nil
}

// ErrBadMove marks a move that cannot be parsed or played: bad input.
var ErrBadMove = errors.New("bad move")

// Parse reads moves as a learner types them, separated by spaces: "1 1 2 w 1", "x" (a fault key on
// the chosen buyer: the last number typed, or 1), "x2" (on buyer 2). An unknown key is an error
// naming it.
func Parse(s string) ([]Move, error) {
	var out []Move
	chosen := 1
	for _, f := range strings.Fields(s) {
		m, err := parseOne(f, chosen)
		if err != nil {
			return nil, err
		}
		if m.sends() || m.Fault() != nil {
			chosen = m.Buyer
		}
		out = append(out, m)
	}
	return out, nil
}

// ParseKey reads one move as a key pressed with buyer chosen.
func ParseKey(key string, chosen int) (Move, error) { return parseOne(key, chosen) }

func parseOne(f string, chosen int) (Move, error) {
	switch {
	case len(f) == 1 && f[0] >= '1' && f[0] <= '9':
		return Send(int(f[0] - '0')), nil
	case f == KeyWait, f == KeyBuyer, f == KeySkew:
		return Move{Key: f}, nil
	}
	key, n := f, chosen
	if len(f) == 2 && f[1] >= '1' && f[1] <= '9' {
		key, n = f[:1], int(f[1]-'0')
	}
	if FaultOf(key) == nil {
		return Move{}, fmt.Errorf("%w %q: a buyer's number (1–%d), w (time passes), + (another buyer orders), k (another buyer, its clock ahead), or a fault key (%s), which may name its buyer (x2)", ErrBadMove, f, MaxBuyers, faultKeys())
	}
	return Move{Key: key, Buyer: n}, nil
}

func faultKeys() string {
	var ks []string
	for _, sc := range scenario.Keyed() {
		ks = append(ks, sc.Key)
	}
	return strings.Join(ks, " ")
}

// Format says moves as Parse reads them: a fault key names its buyer only where it is not the
// chosen one.
func Format(moves []Move) string {
	var out []string
	chosen := 1
	for _, m := range moves {
		s := m.Key
		if m.Fault() != nil && m.Buyer != chosen {
			s += fmt.Sprint(m.Buyer)
		}
		if m.sends() || m.Fault() != nil {
			chosen = m.Buyer
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}
