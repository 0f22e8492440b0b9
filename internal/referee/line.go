package referee

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
)

// listItems are the items of a list key's value print, in order, where the watcher printed them
// (the embedded backend's); ok is false for any other print (a real server's DUMP).
func listItems(print string) (items []string, ok bool) {
	rest, ok := strings.CutPrefix(print, "list:")
	if !ok {
		return nil, false
	}
	for rest != "" {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return nil, false
		}
		it, _ := strconv.Unquote(q)
		items = append(items, it)
		rest = strings.TrimPrefix(rest[len(q):], ";")
	}
	return items, true
}

// lines says what a command did to a list of the run (step 14's line of waiters): an item is the
// buyer whose command put it there, and the line is said whenever its buyers change. Hazard: only a
// print the watcher can read shows the items (the embedded backend's); on a real server the
// line is not said. Any list of the run is read as a line, whatever a lock keeps in it; the words
// name its key, and no verdict depends on them.
func (r *Referee) lines(rec history.Record) {
	for _, kc := range rec.Keys {
		after, ok := listItems(kc.After)
		if !ok && !kc.Gone() {
			continue
		}
		before, okb := listItems(kc.Before)
		if !okb && kc.Before != "" {
			continue
		}
		nk := nodeKey{rec.Node, kc.Key}
		who := r.listed[nk]
		if who == nil {
			who = map[string]int{}
			r.listed[nk] = who
		}
		joined := false
		for _, it := range after {
			if !slices.Contains(before, it) {
				who[it] = rec.Buyer
				joined = joined || rec.Buyer > 0
			}
		}
		var was, now []int
		for _, it := range before {
			was = append(was, who[it])
		}
		for _, it := range after {
			now = append(now, who[it])
		}
		if kc.Gone() {
			delete(r.listed, nk) // a list made again starts afresh
		}
		if slices.Equal(was, now) {
			continue
		}
		e := Event{At: rec.At, Kind: EvLine, Node: rec.Node, Line: now, Channel: kc.Key}
		if joined {
			e.Buyer = rec.Buyer
		}
		r.say(e)
	}
}
