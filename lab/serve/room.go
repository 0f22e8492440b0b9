package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/lockstep-lab/lockstep/lab/tui"
	"github.com/lockstep-lab/lockstep/steps"
)

// The room: every learner who came, what they are doing, and what they have seen break. The
// labs tell it through tui.Options.Watch (each on its own program's goroutine) and through the
// keys they read; the trainer's screen (screen.go) and the room file (-save) read it.

// Learner is one learner of the room, by the name they gave ssh (NAME@HOST). A learner who
// comes back under the same name after their session ended goes on in the same row.
type Learner struct {
	Name   string    `json:"name"`
	Since  time.Time `json:"since"`          // the start of their latest session
	Left   time.Time `json:"left,omitzero"`  // when it ended; zero while they are here
	Why    string    `json:"why,omitempty"`  // why it ended: "left", "idle 30m", "the lab failed", "room closed"
	Step   string    `json:"step,omitempty"` // the step on their screen, by its slug
	Screen string    `json:"screen,omitempty"`
	Fault  string    `json:"fault,omitempty"` // the last fault key they pressed: "x crash", "b slow"
	Breaks []Break   `json:"breaks,omitempty"`
	Solved []Solved  `json:"solved,omitempty"` // drive challenges reached, one a step, the fewest moves kept
	Key    time.Time `json:"key"`              // their last key (or their arrival)
	Away   bool      `json:"away,omitempty"`   // their lab is held for want of a key
	Visits int       `json:"visits"`           // how many sessions they have had

	here int // sessions open now
}

// Break is a kind a learner saw break on a step, each kind once a step, in the order seen.
type Break struct {
	Step string     `json:"step"`
	Kind steps.Kind `json:"kind"`
	At   time.Time  `json:"at"`
}

// Solved is a step's drive challenge a learner reached (m in the arena): in Moves, against its
// Par, first at At (the time of the fewest moves).
type Solved struct {
	Step  string    `json:"step"`
	Moves int       `json:"moves"`
	Par   int       `json:"par"`
	At    time.Time `json:"at"`
}

// File is what -save writes and lab class reads: the room as it last stood.
type File struct {
	Lockstep string    `json:"lockstep"` // "room"
	Saved    time.Time `json:"saved"`
	Learners []Learner `json:"learners"`
}

// Room is the room: its learners and the trainer's log. Hazard: every method may be called from
// any goroutine; a Learner is only read through Snapshot.
type Room struct {
	mu       sync.Mutex
	learners []*Learner
	log      []string
	logs     int           // lines ever logged
	changed  chan struct{} // capacity 1: something changed since the screen or the file last read it
	now      func() time.Time
}

// logN is how many of the latest log lines the room keeps.
const logN = 8

// NewRoom is a room holding the learners of f (a room file saved before), or an empty one.
func NewRoom(f *File) *Room {
	r := &Room{changed: make(chan struct{}, 1), now: time.Now}
	if f != nil {
		for i := range f.Learners {
			l := f.Learners[i]
			if l.Left.IsZero() {
				l.Left, l.Why = f.Saved, "room closed"
			}
			l.Away, l.here = false, 0
			r.learners = append(r.learners, &l)
		}
	}
	return r
}

// join seats a learner under name: the row of that name if nobody is in it, else "name (2)"…
func (r *Room) join(name string) *Learner {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	for n := 1; ; n++ {
		want := name
		if n > 1 {
			want = fmt.Sprintf("%s (%d)", name, n)
		}
		i := slices.IndexFunc(r.learners, func(l *Learner) bool { return l.Name == want })
		if i >= 0 && r.learners[i].here > 0 {
			continue
		}
		if i < 0 {
			r.learners = append(r.learners, &Learner{Name: want})
			i = len(r.learners) - 1
		}
		l := r.learners[i]
		l.Since, l.Left, l.Why, l.Key, l.Away, l.here = now, time.Time{}, "", now, false, 1
		l.Visits++
		r.logLocked("%s came in", want)
		return l
	}
}

// leave ends l's session, saying why.
func (r *Room) leave(l *Learner, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.here, l.Left, l.Why, l.Away = 0, r.now(), why, false
	r.logLocked("%s: %s", l.Name, why)
}

// tell takes what l's lab said (tui.Options.Watch).
func (r *Room) tell(l *Learner, a tui.Activity) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.Step, l.Screen, l.Away = a.Step, a.Screen, a.Away
	if a.Fault != "" {
		l.Fault = a.Fault
	}
	if a.Broke != "" && !slices.ContainsFunc(l.Breaks, func(b Break) bool { return b.Step == a.Step && b.Kind == a.Broke }) {
		l.Breaks = append(l.Breaks, Break{Step: a.Step, Kind: a.Broke, At: r.now()})
	}
	if a.Solved > 0 {
		i := slices.IndexFunc(l.Solved, func(s Solved) bool { return s.Step == a.Step })
		switch {
		case i < 0:
			l.Solved = append(l.Solved, Solved{Step: a.Step, Moves: a.Solved, Par: a.Par, At: r.now()})
		case a.Solved < l.Solved[i].Moves:
			l.Solved[i].Moves, l.Solved[i].At = a.Solved, r.now()
		default:
			a.Solved = 0 // not news
		}
		if a.Solved > 0 {
			r.logLocked("%s reached %s's drive goal in %d moves (par %d)", l.Name, a.Step, a.Solved, a.Par)
		}
	}
	r.changedLocked()
}

// key notes that l pressed a key (or sent any input).
func (r *Room) key(l *Learner) {
	r.mu.Lock()
	l.Key = r.now()
	r.mu.Unlock()
}

// lastKey is when l last pressed a key.
func (r *Room) lastKey(l *Learner) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.Key
}

// Logf adds a line to the trainer's log.
func (r *Room) Logf(format string, a ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logLocked(format, a...)
}

func (r *Room) logLocked(format string, a ...any) {
	line := r.now().Format("15:04:05") + "  " + fmt.Sprintf(format, a...)
	if len(r.log) == logN {
		r.log = r.log[1:]
	}
	r.log = append(r.log, line)
	r.logs++
	r.changedLocked()
}

// logSince is the lines logged after the first n (those still kept), and how many there are now.
func (r *Room) logSince(n int) ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log[max(0, len(r.log)-(r.logs-n)):]), r.logs
}

func (r *Room) changedLocked() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Snapshot is the room as it stands: a copy of every learner, the log, and the time.
func (r *Room) Snapshot() (File, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := File{Lockstep: "room", Saved: r.now()}
	for _, l := range r.learners {
		c := *l
		c.Breaks = slices.Clone(l.Breaks)
		c.Solved = slices.Clone(l.Solved)
		f.Learners = append(f.Learners, c)
	}
	return f, slices.Clone(r.log)
}

// Here is how many learners are in the room now.
func (r *Room) Here() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.learners {
		n += l.here
	}
	return n
}

// ReadFile reads a room file -save wrote. A file that is not one is an error naming it, and
// a missing file is os.ErrNotExist (wrapped).
func ReadFile(name string) (*File, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil || f.Lockstep != "room" {
		return nil, fmt.Errorf("%s is not a room file lab serve -save wrote", name)
	}
	return &f, nil
}

// IsRoomFile tells whether the JSON in b is a room file.
func IsRoomFile(b []byte) bool {
	var probe struct {
		Lockstep string `json:"lockstep"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Lockstep == "room"
}

// save writes the room to name at once, through a file beside it renamed over it, so a reader
// never sees half a room.
func (r *Room) save(name string) error {
	f, _ := r.Snapshot()
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".room-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
