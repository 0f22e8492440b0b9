package picture

import "time"

// Lanes: buyer n's lane is n (from 1); lock node i's is Node(i); the lock's own lane, whom a
// majority of the nodes gives the lock, is Owner; the inventory's is Inventory; the ruler above
// the lanes (a violation's mark) is Ruler.
const (
	Owner     = 0
	Inventory = -1 << 20
	Ruler     = Inventory - 1
)

// Node is lock node i's lane (i from 0).
func Node(i int) int { return -1 - i }

// NodeOf is the node of lane l, and whether l is a node's lane.
func NodeOf(l int) (int, bool) { return -1 - l, l < 0 && l > Inventory }

// Kind is what a stretch of a lane shows.
type Kind uint8

// The kinds of stretches. A buyer's: it waits for the lock, works without one (a step that takes
// none), holds the lock, is inside the critical section, overlaps (the referee found it inside
// together with another order), is cut off from the lock server, frozen, crashed, and holds the
// lock entered more than once (Nested: a Lock granted while its process held it, until the
// Unlock that gives that entry back; the hold goes on under it). A node's and the Owner lane's:
// Held, a buyer's lock there.
const (
	Wait Kind = iota
	Work
	Hold
	Inside
	Overlap
	Cut
	Frozen
	Dead
	Held
	Nested
)

// Class is the page's class for a stretch of kind k.
func (k Kind) Class() string {
	return [...]string{"wait", "work", "hold", "in", "over", "cut", "frozen", "dead", "lock", "nest"}[k]
}

// Span is one stretch of a lane, from From to To (To is the fold's latest moment while Open).
type Span struct {
	Lane     int
	Kind     Kind
	From, To time.Duration
	Open     bool
	Holder   int    // Held: whose lock
	Left     bool   // Held: what a hold left on a node after it ended on another
	Why      string // Held: why it ended, where no event of its own said so ("taken over")
	Event    int    // the event it is about (the fold's count from 0: the acquiring event, the crash), -1 for none
}

// Drawn is a mark drawn on a lane: mark ID at At. Text replaces the mark's glyph where the
// glyph is a number (the stock a read or write saw); Label says whose it is ("b2·t5").
type Drawn struct {
	Lane        int
	At          time.Duration
	ID          ID
	Text, Label string
}

// Glyph is how d is drawn.
func (d Drawn) Glyph() string {
	if d.Text != "" {
		return d.Text
	}
	return d.ID.Glyph()
}

// State is what a buyer's lane is at a moment, weakest first: a terminal column shows the
// strongest state it saw.
type State uint8

// The states.
const (
	Idle State = iota
	Waits
	Works     // at work without a lock (a step that takes none): no critical section to be in
	Holds     // owns the lock, outside the critical section
	In        // inside the critical section
	CutOff    // cut off from the lock server (a partition), not inside
	CutIn     // inside, cut off from the lock server: its lock cannot tell it anything
	Overlaps  // inside together with another order, as the referee found it
	IsFrozen  // its process is frozen
	IsCrashed // its process died
)

// Flags is a set of kinds, a bit each.
type Flags uint16

// StateOf is the state a lane shows with the kinds in f.
func StateOf(f Flags) State {
	has := func(k Kind) bool { return f&(1<<k) != 0 }
	switch {
	case has(Dead):
		return IsCrashed
	case has(Frozen):
		return IsFrozen
	case has(Overlap):
		return Overlaps
	case has(Cut) && has(Inside):
		return CutIn
	case has(Cut):
		return CutOff
	case has(Inside):
		return In
	case has(Hold):
		return Holds
	case has(Work):
		return Works
	case has(Wait):
		return Waits
	}
	return Idle
}

// open is a stretch under way.
type open struct {
	from  time.Duration
	event int
}

// buyer is one buyer as the events tell it.
type buyer struct {
	under  map[int]bool // orders started and not returned
	waits  map[int]open // order → its wait (or, with no lock, its work)
	inside map[int]open // order → inside since
	state  map[Kind]open
	woken  bool // a wake-up was published while it waited, and it has not tried since
}

// node is the lock on one node: whose, since when, and whether it is what an ended hold left.
type node struct {
	holder int
	from   time.Duration
	event  int
	left   bool
}
