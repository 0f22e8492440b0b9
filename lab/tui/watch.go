package tui

import (
	"github.com/lockstep-lab/lockstep/steps"
)

// Activity is what the lab tells Options.Watch, the one way out of it for a trainer watching
// the room (lab serve): where the learner is, each time that changes, and each fault key they
// press and each kind they see break, as it happens.
type Activity struct {
	Step   string // the step on screen, by its slug ("04_atomic_ttl"); every Activity says it
	Screen string // "picker", "arena", "code" or "help"
	Away   bool   // the lab is held for want of a key (Options.IdlePause)
	// Fault is a fault key pressed just now, with what it plays: "x crash", "b slow"; else "".
	Fault string
	// Broke is a kind the referee found just now on Step, the first time on that step; else "".
	Broke steps.Kind
	// Solved is the moves in which the learner just reached Step's drive challenge (its goal), the
	// first time or in fewer moves than before; Par is the challenge's. 0 otherwise.
	Solved, Par int
}

// watcher tells Options.Watch what changed after each message.
type watcher struct {
	tell  func(Activity)
	told  Activity        // where the learner was last said to be
	broke map[string]bool // step/kind, each told once
	best  map[string]int  // step: the fewest moves its challenge was told reached in
}

// watch tells where the learner is if that changed, the fault key the model noted (pressed),
// and every kind the picture on screen has seen that was not told yet for its step.
func (w *watcher) watch(m *model, away bool) {
	if w.tell == nil {
		m.pressed = ""
		return
	}
	now := Activity{Step: m.step().Slug, Screen: screenName(m), Away: away}
	if now != w.told {
		w.told = now
		w.tell(now)
	}
	if m.pressed != "" {
		a := now
		a.Fault, m.pressed = m.pressed, ""
		w.tell(a)
	}
	if dm := m.drv; dm != nil && dm.reached > 0 {
		if best, ok := w.best[now.Step]; !ok || dm.reached < best {
			w.best[now.Step] = dm.reached
			a := now
			a.Solved, a.Par = dm.reached, dm.ch.Par()
			w.tell(a)
		}
	}
	if m.ar == nil {
		return
	}
	for _, k := range m.ar.seen {
		if id := now.Step + "/" + string(k); !w.broke[id] {
			w.broke[id] = true
			a := now
			a.Broke = k
			w.tell(a)
		}
	}
}

// screenName is the screen the learner sees, in Activity's words.
func screenName(m *model) string {
	switch {
	case m.help:
		return "help"
	case m.scr == scrArena:
		return "arena"
	case m.scr == scrCode:
		return "code"
	}
	return "picker"
}
