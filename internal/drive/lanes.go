package drive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// What a session shows between moves: the moves played, what the referee found, each buyer's
// lane, the lock, the history's new records.

// Moves is the moves played so far.
func (s *Session) Moves() []Move {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.moves)
}

// Found is every violation the referee announced so far, first first.
func (s *Session) Found() []Found {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.found)
}

// Lane is one buyer as a drive session shows it: the first command it has waiting, in words (and
// how many more wait behind it), or, when none waits, what it is doing.
type Lane struct {
	Buyer int    `json:"buyer"`
	Next  string `json:"next,omitempty"`
	More  int    `json:"more,omitempty"`
	State string `json:"state,omitempty"`
}

// String says the lane in a line: "buyer 2 next: GET lock:product:1001 — is the lock still mine?".
func (l Lane) String() string {
	if l.Next == "" {
		return fmt.Sprintf("buyer %d: %s", l.Buyer, l.State)
	}
	s := fmt.Sprintf("buyer %d next: %s", l.Buyer, l.Next)
	if l.More > 0 {
		s += fmt.Sprintf(" (and %d more waiting)", l.More)
	}
	return s
}

// Lanes is every buyer's lane.
func (s *Session) Lanes() []Lane {
	s.mu.Lock()
	bs := slices.Clone(s.buyers)
	s.mu.Unlock()
	var out []Lane
	for _, b := range bs {
		l := Lane{Buyer: b.n}
		if q := s.g.queue(b.n); len(q) > 0 {
			l.Next, l.More = q[0].words, len(q)-1
		} else {
			l.State = s.state(b)
		}
		out = append(out, l)
	}
	return out
}

// state says what b is doing when it has nothing waiting at the gate.
func (s *Session) state(b *buyer) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case b.dead:
		return "crashed: none of its code reaches Redis again"
	case b.frozen:
		return "frozen: none of its commands leave until it thaws (time passes, or another buyer acts)"
	case b.orders == b.done && b.last != "":
		return "done — " + b.last
	case b.orders == b.done:
		return "no order under way"
	case len(b.atWork) > 0:
		return "at its work, which ends as time passes (w)"
	case b.cut:
		return "cut off from the lock server: its lock commands wait for the link"
	}
	return "waits on its own clock (a pause between tries, a wake-up, a reply it lost): w lets time pass"
}

// Lock says where the lock stands, on each node: held by whom and for how long, or free.
func (s *Session) Lock() string {
	var parts []string
	names := s.a.NodeNames()
	for i, l := range s.a.Locks(context.Background()) {
		var w string
		switch {
		case !l.Held:
			w = "free"
		case l.Owner > 0 && l.TTL < 0:
			w = fmt.Sprintf("held by buyer %d, no expiry", l.Owner)
		case l.Owner > 0:
			w = fmt.Sprintf("held by buyer %d, %s left", l.Owner, l.TTL.Round(time.Millisecond))
		case l.TTL < 0:
			w = "held, no expiry"
		default:
			w = fmt.Sprintf("held, %s left", l.TTL.Round(time.Millisecond))
		}
		if len(names) > 1 {
			w = names[i] + ": " + w
		}
		parts = append(parts, w)
	}
	return "the lock: " + strings.Join(parts, "; ")
}

// Records is the records added since the last call (all of them the first time).
func (s *Session) Records() []history.Record {
	h := s.a.History()
	out := h.Records[s.sent:]
	s.sent = len(h.Records)
	return out
}

// Header is the session's history without its records.
func (s *Session) Header() history.History {
	h := s.a.History()
	h.Records = nil
	return *h
}
