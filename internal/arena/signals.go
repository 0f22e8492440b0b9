package arena

import (
	"sync"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

// sig is what a buyer did, as a stage's waits name it.
type sig int

const (
	sigEntered   sig = iota + 1 // read the stock: inside the critical section
	sigDone                     // an order returned
	sigWrote                    // wrote the stock
	sigSettled                  // met the lock: got in, refused, found it taken, or done
	sigUnder                    // inside, at its work, or done: under way past its lock
	sigRestarted                // a lock node restarted (buyer 0: the stage's own)
)

// sigKey names one signal: of a buyer (0: the stage itself), of one of its orders (its k-th; 0:
// any).
type sigKey struct {
	buyer, order int
	kind         sig
}

// signals turns the referee's events into channels a stage can wait on. Each signal closes once
// and stays closed: a wait made after the fact returns at once.
type signals struct {
	mu    sync.Mutex
	chans map[sigKey]chan struct{}
	fired map[sigKey]bool
	by    map[sig]map[int]bool // buyers that have given each signal
	alls  map[sigKey]chan struct{}
	waits []*pending // one-shot waits for the next event that matches
}

// pending is a wait for the first event from its making on that matches: c closes, and the event
// is sent on e (buffered) where the waiter wants it.
type pending struct {
	match func(referee.Event) bool
	c     chan struct{}
	e     chan referee.Event
}

func newSignals() *signals {
	return &signals{chans: map[sigKey]chan struct{}{}, fired: map[sigKey]bool{},
		by: map[sig]map[int]bool{}, alls: map[sigKey]chan struct{}{}}
}

// get is the channel of signal k.
func (s *signals) get(k sigKey) Wait {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chanLocked(k)
}

func (s *signals) chanLocked(k sigKey) chan struct{} {
	c, ok := s.chans[k]
	if !ok {
		c = make(chan struct{})
		s.chans[k] = c
	}
	return c
}

// next is a wait for the first event from now on that match accepts.
func (s *signals) next(match func(referee.Event) bool) Wait {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &pending{match: match, c: make(chan struct{})}
	s.waits = append(s.waits, p)
	return p.c
}

// nextEvent is the first event from now on that match accepts, once it has happened.
func (s *signals) nextEvent(match func(referee.Event) bool) <-chan referee.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &pending{match: match, c: make(chan struct{}), e: make(chan referee.Event, 1)}
	s.waits = append(s.waits, p)
	return p.e
}

// allBut closes once every buyer that has given any signal, but except, has given kind, and at
// least one has. Hazard: it counts the buyers it has heard of; a stage calls it once every buyer
// is on it.
func (s *signals) allBut(except int, kind sig) Wait {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := sigKey{buyer: except, kind: kind}
	c, ok := s.alls[key]
	if !ok {
		c = make(chan struct{})
		s.alls[key] = c
	}
	return c
}

// has reports whether signal k has been given.
func (s *signals) has(k sigKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fired[k]
}

// fire gives signal k.
func (s *signals) fire(k sigKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fireLocked(k)
}

func (s *signals) fireLocked(k sigKey) {
	if s.fired[k] {
		return
	}
	s.fired[k] = true
	close(s.chanLocked(k))
	if k.order != 0 || k.buyer == 0 {
		return
	}
	if s.by[k.kind] == nil {
		s.by[k.kind] = map[int]bool{}
	}
	s.by[k.kind][k.buyer] = true
}

// see takes the next event of the arena. It never blocks: its caller holds the arena's lock.
func (s *signals) see(e referee.Event, buyers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A peek (a read before the order's Lock said yes: referee.Event.Peek) is no entry and no
	// meeting of the lock, for the stage as for the referee. Hazard: taken for an entry, a peek let
	// restart's and failover's holder go one Work after the second buyer's peek, and the overlap
	// they stage rested on that margin (1 of 2 server runs of a learner's peeking lock under
	// restart: none).
	if e.Peek() {
		return
	}
	kept := s.waits[:0]
	for _, p := range s.waits {
		if p.match(e) {
			close(p.c)
			if p.e != nil {
				p.e <- e
			}
		} else {
			kept = append(kept, p)
		}
	}
	s.waits = kept
	var kinds []sig
	switch e.Kind {
	case referee.EvEnter:
		kinds = []sig{sigEntered, sigSettled, sigUnder}
	case referee.EvDone:
		kinds = []sig{sigDone, sigSettled, sigUnder}
	case referee.EvWrite:
		kinds = []sig{sigWrote}
	case referee.EvWork:
		// An order that works before it touches the stock (no lock, an atomic sale) is under
		// way from here: the others come while it works, as they would while it held a lock.
		kinds = []sig{sigUnder}
	case referee.EvWaiting, referee.EvRefused:
		kinds = []sig{sigSettled}
	}
	if e.Buyer == 0 {
		return
	}
	for _, k := range kinds {
		if e.Order != 0 {
			s.fireLocked(sigKey{buyer: e.Buyer, order: e.Order, kind: k})
		}
		s.fireLocked(sigKey{buyer: e.Buyer, kind: k})
	}
	for key, c := range s.alls {
		n := 0
		for b := range s.by[key.kind] {
			if b != key.buyer {
				n++
			}
		}
		select {
		case <-c:
		default:
			if n > 0 && n >= buyers-1 {
				close(c)
			}
		}
	}
}
