package arena

import (
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// FaultUnlockRace: the process freezes just before a command of its Unlock, until its
// counterpart acts.
const FaultUnlockRace history.Fault = "unlock-race"

var _ = addMove(&Move{
	Fault: FaultUnlockRace, Rank: 5, On: OnOrder, Explored: true, Scenario: steps.UnlockRace,
	What: "the process freezes just before a command of its Unlock, until its counterpart acts",
	Arm:  func(s *Stage, b *Actor, gap int) error { b.FreezeBeforeUnlockCommand(gap); return nil },
})

// FreezeBeforeUnlockCommand freezes the buyer's whole process before the gap-th command of its
// next Unlock (one begun holding a lock) that names a key its Lock wrote — gap 0: before the
// first such command that may delete one — until its counterpart has acted (at most 4 × TTL).
// Struck says before which command it froze; Touched how many of the call's commands named
// those keys.
func (b *Actor) FreezeBeforeUnlockCommand(gap int) *UnlockRace {
	s := b.s
	r := &unlockRace{gap: gap, cap: capUnlock * s.a.t.TTL, until: func() Wait { return s.Met(b) }}
	r.m = s.newMove(FaultUnlockRace, func(m *move) {
		b.p.mu.Lock()
		unlocks := r.unlocks
		b.p.mu.Unlock()
		switch {
		case s.a.lockCalls(b.p) == 0:
			s.a.note("buyer %d's order takes no lock: there is no release to race", b.N)
		case gap > 1:
			// a later play's gap may not be there: its release went otherwise
		case unlocks == 0:
			s.a.nowhere("the unlock-race found nowhere to strike: buyer %d never called Unlock holding a lock its Lock wrote", b.N)
		default:
			s.a.nowhere("the unlock-race found nowhere to strike: buyer %d's Unlock sent no command that names a key its Lock wrote", b.N)
		}
	})
	s.a.mu.Lock()
	r.after = s.a.nextCall
	s.a.mu.Unlock()
	b.p.mu.Lock()
	b.p.race = r
	b.p.mu.Unlock()
	u := &UnlockRace{r: r, p: b.p}
	s.mu.Lock()
	s.race = u
	s.mu.Unlock()
	return u
}

// UnlockRace is what a freeze before an unlock command learned.
type UnlockRace struct {
	r *unlockRace
	p *process
}

// Struck is the label of the command the freeze came before ("" if it did not strike).
func (u *UnlockRace) Struck() string {
	u.p.mu.Lock()
	defer u.p.mu.Unlock()
	return u.r.label
}

// Touched is the most commands an Unlock call (of any buyer, begun holding a lock) carried out
// that named a key its Lock wrote: the gaps an unlock-race can try.
func (u *UnlockRace) Touched() int {
	a := u.p.a
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.unlockTouched
}

// unlockRace is a freeze before an unlock command, armed on a process: it freezes the process
// inside its release, between the commands of the Unlock that touch what the process holds.
type unlockRace struct {
	m *move
	// gap: freeze before the gap-th command of the process's first Unlock (one that began
	// holding a lock) that names a key it holds; 0 before the first such command that may
	// delete one.
	gap   int
	cap   time.Duration // how long at most
	until func() Wait   // what it lasts until, made as it strikes
	label string        // the command it froze before, once it struck
	// after is the last call id handed out when it was armed: an Unlock already under way then
	// is not the one it waits for.
	after int
	// unlocks is the process's Unlock calls that began holding a lock, since it was armed, and
	// first the id of the first of them: what is sent on its behalf after it returned is still
	// raced (releaseOf).
	unlocks int
	first   int
}

// unlockRace freezes p before a command of Unlock call c that names a key its process held as c
// began, as the freeze armed on p says: before the command that follows gap−1 such commands
// carried out.
func (p *process) unlockRace(c *call, node int, cmds []redis.Cmder) {
	if c == nil || c.kind != unlockCall || !namesAny(cmds, p.a.prefix, c.holdKeys[node]) {
		return
	}
	p.mu.Lock()
	r := p.race
	strike := r != nil && r.label == "" && (r.unlocks == 0 || r.first == c.id) && c.id > r.after &&
		(r.gap == c.touched+1 || (r.gap == 0 && mayDeleteAny(cmds, p.a.prefix, c.holdKeys[node])))
	p.mu.Unlock()
	if !strike {
		return
	}
	a := p.a
	hc := a.cmds(cmds)
	a.mu.Lock()
	label := a.live.CommandOf(hc, node, c.id).Label
	a.mu.Unlock()
	p.mu.Lock()
	r.label = label
	p.mu.Unlock()
	says := "the whole process freezes just before " + label + ", " + a.lasting(r.cap)
	if r.m.strike(p.n, says, hc, node) {
		p.freeze(r.cap, r.until(), counterpart)
	}
}
