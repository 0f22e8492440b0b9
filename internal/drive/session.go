package drive

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/internal/referee"
	"github.com/lockstep-lab/lockstep/internal/vocab"
	"github.com/lockstep-lab/lockstep/steps"
)

// Scenario is the name a drive session's history carries.
const Scenario vocab.Scenario = "drive"

// Judged is the kinds a drive session is judged for: every kind but idle. Hazard: the learner
// decides when each waiter's command leaves, so a free lock with a waiter is the driver's choice
// as often as the lock's; idle, the one kind measured in time a waiter lost, would blame the lock
// for the learner's pause.
func Judged() []vocab.Kind {
	return slices.DeleteFunc(slices.Clone(vocab.Kinds), func(k vocab.Kind) bool { return k == vocab.Idle })
}

// Config is what a session plays.
type Config struct {
	Step   *steps.Step
	Buyers int // buyers with an order under way at the start (0: 2)
	Stock  int // units on the shelf (0: 3)
}

func (c Config) buyers() int { return cmp0(c.Buyers, 2) }
func (c Config) stock() int  { return cmp0(c.Stock, 3) }

func cmp0(n, or int) int {
	if n <= 0 {
		return or
	}
	return n
}

// Session is one drive session, played inside a testing/synctest bubble: it opens the embedded
// backend there, and every move runs its consequences to the end before it returns (settle), so
// nothing moves between moves. Hazard: it must live and end inside one bubble, and settle must be
// that bubble's synctest.Wait; outside a bubble nothing stands still.
type Session struct {
	cfg    Config
	settle func()
	t      history.Timing
	env    redisenv.Env
	a      *arena.Arena
	g      *gate
	sp     *speaker
	buyers []*buyer
	moves  []Move
	sent   int // records already in a frame

	mu     sync.Mutex // guards what the events tell (OnEvent runs in the buyers' goroutines)
	events []referee.Event
	found  []Found
}

// buyer is one buyer of a session: on a stage of its own, so that its orders end on their own
// when the session ends, one buyer after another.
type buyer struct {
	n      int
	act    *arena.Actor
	s      *arena.Stage
	cancel context.CancelFunc
	// what the referee's events said of it (guarded by the session's mu)
	orders, done int
	atWork       map[int]bool // its orders at their work, by the buyer's count
	dead, frozen bool
	cut          bool
	last         string // what its last order came to, in words
}

// Found is a violation the referee announced during a session: the first of its kind, after which
// move (1: the first), in the referee's words.
type Found struct {
	Kind     vocab.Kind `json:"kind"`
	Move     int        `json:"move"`
	Sentence string     `json:"sentence"`
}

// Open starts a session of cfg: the shelf stocked, its buyers each with an order under way, each
// order's first command waiting at the gate. settle is the bubble's synctest.Wait.
func Open(cfg Config, settle func()) (*Session, error) {
	if cfg.Step == nil {
		return nil, fmt.Errorf("drive: a session needs a step")
	}
	s := &Session{cfg: cfg, settle: settle, t: history.DefaultTiming(), sp: newSpeaker()}
	s.g = newGate(s.sp, s.t.RTT)
	env, err := redisenv.Open("embedded", redisenv.Options{Nodes: cfg.Step.Nodes})
	if err != nil {
		return nil, err
	}
	s.env = env
	s.a, err = arena.NewArena(context.Background(), arena.Config{Step: cfg.Step, Env: env, Timing: s.t, Stock: cfg.stock(),
		Scenario: Scenario, What: "a drive session: the learner sent each command, let time pass and struck faults, move by move",
		Judged: Judged(), OnEvent: s.see, Gate: s.g})
	if err != nil {
		env.Close()
		return nil, err
	}
	if names := s.a.NodeNames(); len(names) > 1 {
		s.sp.nodes = names
	}
	for range cfg.buyers() {
		s.addBuyer()
	}
	return s, nil
}

// addBuyer puts a buyer on the stage with an order under way.
func (s *Session) addBuyer(opts ...arena.BuyerOption) *buyer {
	ctx, cancel := context.WithCancel(context.Background())
	st := s.a.NewStage(ctx, 1, s.t)
	b := &buyer{s: st, cancel: cancel, atWork: map[int]bool{}}
	b.act = st.Buyer(opts...)
	b.n = b.act.N
	s.mu.Lock()
	s.buyers = append(s.buyers, b)
	s.mu.Unlock()
	b.act.Order()
	st.Sleep(0) // the stage's orders start at its first wait
	s.settle()  // one buyer's first records before the next buyer's
	return b
}

// see takes the referee's events (arena.Config.OnEvent): it is called with the arena's lock held.
func (s *Session) see(e referee.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	if e.Kind == referee.EvViolation {
		s.found = append(s.found, Found{Kind: e.Viol, Move: len(s.moves), Sentence: e.Sentence})
	}
	var b *buyer
	for _, x := range s.buyers {
		if x.n == e.Buyer {
			b = x
		}
	}
	if b == nil {
		return
	}
	switch e.Kind {
	case referee.EvStart:
		b.orders++
	case referee.EvWork:
		b.atWork[e.Order] = true
	case referee.EvEnter, referee.EvWrite, referee.EvExit:
		delete(b.atWork, e.Order)
	case referee.EvDone:
		b.done++
		delete(b.atWork, e.Order)
		b.last = e.Words()
	case referee.EvCrashed:
		b.dead = true
	case referee.EvFrozen:
		b.frozen = true
	case referee.EvThawed:
		b.frozen = false
	case referee.EvPartitioned:
		b.cut = true
	case referee.EvHealed:
		b.cut = false
	}
}

// slot is how long a sent command takes on the bubble's clock: its round trip. What it set off
// (a release's idle probe, a subscriber woken) is done by the end of it, before the next move.
func (s *Session) slot() time.Duration { return s.t.RTT }

// Wait is how long w lets pass: a quarter TTL.
func (s *Session) Wait() time.Duration { return s.t.TTL / 4 }

// Play plays m. A move that cannot be played (a buyer with nothing to send, a buyer that is not
// on the stage) is an error wrapping ErrBadMove, and is not played: the session is as it was.
func (s *Session) Play(m Move) (said []string, err error) {
	s.mu.Lock()
	s.events = nil
	nb := len(s.buyers)
	s.mu.Unlock()
	var head string
	switch {
	case m.sends():
		b := s.buyer(m.Buyer)
		if b == nil {
			return nil, fmt.Errorf("%w %s: there is no buyer %d (the stage has %d; + brings another)", ErrBadMove, m.Key, m.Buyer, nb)
		}
		if len(s.g.queue(m.Buyer)) == 0 {
			return nil, fmt.Errorf("%w %s: buyer %d has nothing to send: %s", ErrBadMove, m.Key, m.Buyer, s.state(b))
		}
		s.played(m)
		h := s.g.send(m.Buyer)
		head = fmt.Sprintf("buyer %d sends %s", m.Buyer, h.words)
		s.settle()
		time.Sleep(s.slot())
		s.settle()
	case m.Key == KeyWait:
		s.played(m)
		time.Sleep(s.Wait())
		s.settle()
		s.a.Tick()
		head = fmt.Sprintf("a quarter TTL passes: %s (now %s)", s.Wait(), s.now())
	case m.Key == KeyBuyer || m.Key == KeySkew:
		if nb >= MaxBuyers {
			return nil, fmt.Errorf("%w %s: the stage has %d buyers already, the most a drive session has", ErrBadMove, m.Key, MaxBuyers)
		}
		s.played(m)
		var opts []arena.BuyerOption
		if m.Key == KeySkew {
			opts = append(opts, arena.Skewed(3*s.t.TTL))
		}
		b := s.addBuyer(opts...)
		head = fmt.Sprintf("buyer %d comes and starts an order", b.n)
		if m.Key == KeySkew {
			head = fmt.Sprintf("buyer %d comes, its wall clock %s ahead, and starts an order", b.n, 3*s.t.TTL)
		}
	default:
		sc := m.Fault()
		if sc == nil {
			return nil, fmt.Errorf("%w %q", ErrBadMove, m.Key)
		}
		b := s.buyer(m.Buyer)
		if b == nil {
			return nil, fmt.Errorf("%w %s: there is no buyer %d (the stage has %d; + brings another)", ErrBadMove, m.Key, m.Buyer, nb)
		}
		s.mu.Lock()
		dead := b.dead
		s.mu.Unlock()
		if dead {
			return nil, fmt.Errorf("%w %s: buyer %d is dead: there is nothing left to strike", ErrBadMove, m.Key, m.Buyer)
		}
		if s.cfg.Step.NoLock && sc.Lockless != "" {
			return nil, fmt.Errorf("%w %s: %s", ErrBadMove, m.Key, sc.Lockless)
		}
		if err := sc.Hit(b.s, b.act); err != nil {
			return nil, fmt.Errorf("%w %s: %v", ErrBadMove, m.Key, err)
		}
		s.played(m)
		s.settle()
		head = fmt.Sprintf("%s on buyer %d: %s", sc.Label, m.Buyer, sc.Pressed)
	}
	said = append(said, head)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.Kind == referee.EvCommand || e.Kind == referee.EvStart && m.Key == KeyBuyer {
			continue
		}
		said = append(said, e.Words())
	}
	return said, nil
}

// played counts m as played: what the referee finds from now on, it finds after m.
func (s *Session) played(m Move) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.moves = append(s.moves, m)
}

// now is the session's time, as a person reads it.
func (s *Session) now() string {
	return (s.a.Since()).Round(10 * time.Microsecond).String()
}

// buyer is buyer n, nil if there is none.
func (s *Session) buyer(n int) *buyer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.buyers {
		if b.n == n {
			return b
		}
	}
	return nil
}

// End ends the session and returns its report, judged for Judged. Each buyer in turn gives up
// its orders as a client that gives up does (their contexts end): what its orders still had to
// send with a context of its own (a deferred unlock, a write already on its way) is sent, one
// command a round trip apart; what was waiting for the ended context, and whatever a Lock call
// still sends (it gives up: a quorum lock's give-back of a try it lost), never leaves. Hazard:
// a Lock that pauses a random back-off between tries is, at the end, asleep or trying as its draws
// say; sent, its commands would make two ends of the same moves two histories. Then the
// processes' own goroutines (a watchdog) run on unheld while the end-of-run probe asks for the
// lock, and the shelf is read back. Buyer by buyer, so the same moves end in the same records.
func (s *Session) End() *referee.Report {
	s.stop()
	rep := s.a.Report(context.Background())
	s.a.Close()
	s.env.Close()
	rep.What = "a drive session, move by move: " + Format(s.Moves())
	if rep.History != nil {
		rep.History.What = rep.What
	}
	return rep
}

// Close ends the session with no report (undo plays it again from its start instead).
func (s *Session) Close() {
	s.stop()
	s.a.Close()
	s.env.Close()
}

// stop ends every buyer's orders, one buyer after another (giveUp), then lets the processes' own
// goroutines' commands go unheld.
func (s *Session) stop() {
	s.mu.Lock()
	bs := slices.Clone(s.buyers)
	s.mu.Unlock()
	for _, b := range bs {
		s.giveUp(b)
	}
	for _, b := range bs {
		b.s.Finish(s.t.TTL, func() bool { return true })
		b.s.Close()
	}
	s.g.open()
}

// giveUp ends b's orders: their contexts end, and what they still send is sent, a round trip
// apart, until they have returned — for at most the longest a staged fault holds a process (a
// freeze's cap, 6 TTL), after which what b still has waiting never leaves.
func (s *Session) giveUp(b *buyer) {
	b.cancel()
	s.settle()
	for limit := s.a.Since() + 6*s.t.TTL; s.a.Since() < limit; {
		s.mu.Lock()
		over := b.orders == b.done
		s.mu.Unlock()
		if over {
			break
		}
		switch h, sent := s.g.answer(b.n, true); {
		case h == nil:
			time.Sleep(s.Wait()) // frozen, or asleep: its time passes
		case sent:
			s.settle()
			time.Sleep(s.slot()) // its round trip
		}
		s.settle()
	}
	s.g.end(b.n)
	s.settle()
}
