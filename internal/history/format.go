package history

import (
	"encoding/json"
	"slices"

	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Version is the format of the histories this code writes (History.Format). The formats:
//
//   - 0: no "format". Written before histories said their format: the header may lack
//     "no_lock" (before the referee told a peek by it) and "what" and "judged" (before a history
//     carried what its scenario judges).
//   - 1: "format" 1; the header always carries "no_lock", and a scenario's "what" and "judged".
//
// Hazard: a change to what a history records, or how, that an older reading would misread is a
// new Version, and upgrade learns what the older one lacked; nothing else guesses a format.
const Version = 1

// UnmarshalJSON reads a history as WriteHistory (or any JSON encoding of it) wrote it, in any
// format, and upgrades it to this one.
func (h *History) UnmarshalJSON(b []byte) error {
	type plain History // History without this method
	var v struct {
		plain
		NoLock *bool `json:"no_lock"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*h = History(v.plain)
	if v.NoLock != nil {
		h.NoLock = *v.NoLock
	}
	h.upgrade(v.NoLock != nil)
	return nil
}

// upgrade brings h, read in an older format, to this one: the one place that knows what each
// format lacked. hasNoLock says whether the header had "no_lock".
//
// Format 0: without "no_lock", it is read as taking no lock when no command reached a lock node
// (no RecCmd), or each read of a lock-free step's order would be a peek. Not "no Lock call":
// reentrant's nested Lock is called, and recorded, on a step that takes no lock too (its Lock
// sends nothing); of the 300 saved cells, this rule reads each as its step says. Without
// "judged", a scenario's history gets its sentence and kinds as the scenario catalog says them
// today (Catalog). Hazard: in a program that does not link the catalog (it registers itself:
// internal/scenario), such a history stays judged for nothing.
func (h *History) upgrade(hasNoLock bool) {
	if h.Format >= Version {
		return
	}
	if !hasNoLock {
		h.NoLock = !slices.ContainsFunc(h.Records, func(r Record) bool { return r.Kind == RecCmd })
	}
	if h.Scenario != "" && h.Judged == nil && Catalog != nil {
		if what, judged, ok := Catalog(h.Scenario); ok {
			h.What, h.Judged = what, judged
		}
	}
}

// Catalog says what scenario sc does and judges today (ok false: no such scenario), for a history
// written before histories carried it (upgrade). The scenario catalog sets it as it starts
// (internal/scenario); nil until then.
var Catalog func(sc vocab.Scenario) (what string, judged []vocab.Kind, ok bool)
