// Package scenario holds the lab's scripted attacks on a step, one file each, as etcd's
// tests/robustness holds its failpoints: a value with its name, what it does in one sentence, the
// kinds it judges, whether it can run on a backend and step, and a short program of the arena's
// moves and waits (arena.Stage). The terminal lab's fault keys play a scenario's Press on a live
// session's holder: the same moves.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
)

// Scenario is one scripted attack on a step.
type Scenario struct {
	Name steps.Scenario
	// Column is its place in the matrix, from 1.
	Column int
	// What says in one sentence what it does to the first lock holder.
	What string
	// Judges is the kinds it judges, and only these: its verdict does not depend on side effects
	// it was not built to provoke.
	Judges []steps.Kind

	// Stock is the shelf at the start (0: 3). Work and Lease stretch the step's Work and TTL (0:
	// 1). Floor, when set, gives the lease at least three times the lock node's measured outage:
	// the holder's lease and a lease guard's clock run while the backend fails over or restarts,
	// and the lock must be lost, not expired.
	Stock, Work, Lease int
	Floor              bool
	// Served stretches the lease this much more on a backend whose Redis is another process (every
	// backend but embedded): there each command's round trip is the machine's, and a lease guard
	// that must prove its lease by renewals answered within two thirds of a TTL loses it under
	// load, a slow network the scenario never staged (16 × contention on Sentinel with the race
	// detector: a buyer's work stopped by its guard, lost-sales, 3 of 4 runs with two burners).
	Served int
	// Deadline is the longest one play may take, in TTLs of the step (0: 30); it grows as the
	// lease does.
	Deadline int
	// Move is the fault it stages (arena.Moves; "" for none): what it needs of a backend is the
	// move's (Move.Needs), and its key plays the move.
	Move history.Fault
	// EachGap plays the program once per gap of the holder's Unlock (unlock-race): Stage.Try is
	// the gap, and the verdict is every play's together.
	EachGap bool

	// Play is the program: it puts buyers on the stage, arms moves, starts orders, and waits;
	// it returns once everything it stages is under way (the stage waits for the orders).
	Play func(s *arena.Stage)

	// Key is the terminal lab's key for Press ("" if it has none), Label its word in the footer
	// and Help what it does, for the help screen. The key plays the scenario's Move on a live
	// session, at its holder (nil for a move armed for whoever comes next): Hit. Pressed says what
	// it did, for the status line, and Lockless why it does nothing on a step that takes no lock
	// ("" when it acts all the same).
	Key, Label, Help string
	Pressed          string
	Lockless         string
	// NeedsHolder is false for a key that arms a move for whoever comes next (a failover).
	NeedsHolder bool
	// Quiet: the key holds new orders until none is under way, arms its move, then lets them come
	// again one after another (arena.Live.Quiet), as its scenario stages a lock nobody waits for.
	Quiet bool
	// Armed is what the lock's topology says while the key's move waits for its lock write ("":
	// the key strikes, or arms nothing the topology shows).
	Armed string
	// Follows is what the status line adds of what came of the key (FollowsOverlap: an overlap
	// or violation the buyer is in, as for every key).
	Follows Follow
}

// A Follow is what the terminal lab's status line follows of what came of a key, beyond the
// overlaps and violations of the buyer it hit.
type Follow int

// The follows.
const (
	FollowsOverlap     Follow = iota // only the overlaps and violations
	FollowsSecondOrder               // the second order the key started: whether it waited its turn
	FollowsUnsold                    // an order of the buyer that returned without selling (a lease guard stopped it)
)

// move is the arena's move sc stages, nil for none.
func (sc *Scenario) move() *arena.Move { return arena.MoveOf(sc.Move) }

// needs says why sc cannot be played on env (nil: it can).
func (sc *Scenario) needs(env redisenv.Env) error {
	if m := sc.move(); m != nil && m.Needs != nil {
		return m.Needs(env)
	}
	return nil
}

// Hit plays sc's key on stage s at holder h (nil: whoever comes next): its move struck at once
// where the move can (Move.Now), else armed (Move.Arm), as its Play arms it.
func (sc *Scenario) Hit(s *arena.Stage, h *arena.Actor) error {
	m := sc.move()
	if m == nil {
		return fmt.Errorf("scenario %s stages no move for its key to play", sc.Name)
	}
	if m.Now != nil {
		m.Now(s, h)
		return nil
	}
	return m.Arm(s, h, 0)
}

var all []*Scenario

// add registers sc.
func add(sc *Scenario) *Scenario {
	all = append(all, sc)
	slices.SortFunc(all, func(a, b *Scenario) int { return a.Column - b.Column })
	return sc
}

// All is every scenario, in matrix order.
func All() []*Scenario { return slices.Clone(all) }

// Names is every scenario's name, in matrix order.
func Names() []steps.Scenario {
	out := make([]steps.Scenario, len(all))
	for i, sc := range all {
		out[i] = sc.Name
	}
	return out
}

// Find is the scenario named name, nil if none is.
func Find(name steps.Scenario) *Scenario {
	for _, sc := range all {
		if sc.Name == name {
			return sc
		}
	}
	return nil
}

// Parse is the scenario named name, as a flag or a file spells it.
func Parse(name string) (*Scenario, bool) {
	sc := Find(steps.Scenario(name))
	return sc, sc != nil
}

// Judges is the kinds scenario name judges (every kind for "", a live session).
func Judges(name steps.Scenario) []steps.Kind {
	if name == "" {
		return steps.Kinds
	}
	if sc := Find(name); sc != nil {
		return sc.Judges
	}
	return nil
}

// The catalog tells a history written before histories carried what their scenario judges the
// scenario's sentence and kinds as they are today (history.Catalog).
func init() {
	history.Catalog = func(name steps.Scenario) (string, []steps.Kind, bool) {
		if sc := Find(name); sc != nil {
			return sc.What, sc.Judges, true
		}
		return "", nil, false
	}
}

// — what a scenario needs of its backend —

// lacking is why cfg's step cannot be played on cfg's lock nodes, wrapping ErrCannotStage: a
// command it needs (Step.Needs) that a node's server does not run. It asks before anything is
// played, so a server without the command gives a reason, never a verdict: played anyway, its
// refusals would read as a lock that merely failed to unlock.
func lacking(ctx context.Context, cfg arena.Config) error {
	if cfg.Step == nil {
		return nil
	}
	if cfg.Step.NeedsReplica {
		for _, node := range cfg.Env.Nodes() {
			if !node.CanFailover() {
				// A server the lab does not own may have replicas of its own, but none the lab
				// knows to acknowledge in time (side_wait refused every order on a redis-server
				// with a replica attached by hand, 2026-11-28): the road is played where the lab
				// runs the replica.
				return fmt.Errorf("%w: %s takes a lock only once a replica acknowledged it (WAIT 1), and the %s backend's %s node has no replica the lab runs beside it: every order would be refused",
					arena.ErrCannotStage, cfg.Step.Slug, cfg.Env.Backend(), node.Name())
			}
		}
	}
	if len(cfg.Step.Needs) == 0 {
		return nil
	}
	cmds := make([]string, len(cfg.Step.Needs))
	for i, n := range cfg.Step.Needs {
		cmds[i] = n.Command
	}
	for _, node := range cfg.Env.Nodes() {
		lacks, server, err := node.Lacks(ctx, cmds)
		if err != nil {
			return fmt.Errorf("scenario: %s node: %w", node.Name(), err)
		}
		if len(lacks) == 0 {
			continue
		}
		var want []string
		for _, n := range cfg.Step.Needs {
			if slices.Contains(lacks, n.Command) {
				want = append(want, fmt.Sprintf("%s (%s)", n.Command, n.Since))
			}
		}
		it := "it"
		if len(want) > 1 {
			it = "them"
		}
		return fmt.Errorf("%w: %s needs %s, and the %s backend's %s node runs %s, which lacks %s",
			arena.ErrCannotStage, cfg.Step.Slug, arena.JoinAnd(want), cfg.Env.Backend(), node.Name(), server, it)
	}
	return nil
}

// ErrUnknown is Run's answer for a name no scenario has.
var ErrUnknown = errors.New("scenario: unknown scenario")

// unit is the step's TTL and Work, before a scenario stretches them.
func unit(cfg arena.Config) history.Timing {
	if cfg.Timing == (history.Timing{}) {
		return history.DefaultTiming()
	}
	return cfg.Timing
}

// timing is the play's clock: the unit stretched as sc says, and its deadline.
func (sc *Scenario) timing(cfg arena.Config) (history.Timing, time.Duration) {
	t := unit(cfg)
	d := sc.Deadline
	if d == 0 {
		d = 30
	}
	deadline := time.Duration(d) * t.TTL
	t.Work *= time.Duration(max(sc.Work, 1))
	t.TTL *= time.Duration(max(sc.Lease, 1))
	if sc.Served > 1 && cfg.Env.Backend() != "embedded" {
		t.TTL *= time.Duration(sc.Served)
		deadline *= time.Duration(sc.Served)
	}
	if sc.Floor {
		// The holder's lease, and a lease guard's clock, run while the backend fails over or
		// restarts: the lease outlasts the longest that was measured three times over. What
		// the run stages is counted in leases (holds, back-offs, a quorum's per-node timeout),
		// so its deadline grows as much as the lease did.
		if lease := 3 * cfg.Env.Nodes()[0].Outage(); lease > t.TTL {
			deadline = time.Duration(float64(deadline) * float64(lease) / float64(t.TTL))
			t.TTL = lease
		}
	}
	return t, deadline
}

// ParseName is the scenario named name, as a flag spells it.
func ParseName(name string) (steps.Scenario, bool) {
	sc := Find(steps.Scenario(name))
	if sc == nil {
		return "", false
	}
	return sc.Name, true
}

// Describe says in one sentence what scenario name does ("" if there is none).
func Describe(name steps.Scenario) string {
	if sc := Find(name); sc != nil {
		return sc.What
	}
	return ""
}

// Keyed is every scenario with a key for the terminal lab, in matrix order.
func Keyed() []*Scenario {
	var out []*Scenario
	for _, sc := range all {
		if sc.Key != "" {
			out = append(out, sc)
		}
	}
	return out
}

// Press plays sc's key on live session l: its move, at the current holder (arena.ErrNoHolder when
// nobody holds the lock and the move needs a holder). It returns the buyer it hit, 0 for a move
// armed for whoever comes next.
func Press(l *arena.Live, sc *Scenario) (int, error) {
	s := l.Stage()
	var h *arena.Actor
	if sc.NeedsHolder {
		if h = s.Holder(); h == nil {
			return 0, arena.ErrNoHolder
		}
	}
	press := func() error { return sc.Hit(s, h) }
	if sc.Quiet {
		cap := 6 * l.Arena().Timing().TTL
		if err := l.Quiet(cap, press); err != nil {
			return 0, err
		}
	} else if err := press(); err != nil {
		return 0, err
	}
	if h == nil {
		return 0, nil
	}
	return h.N, nil
}
