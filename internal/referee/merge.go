package referee

import (
	"slices"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Merge is the verdict of several plays of one cell: every violation any of them found (with the
// first sentence for each kind), every kind any of them could not judge. Its History is the first
// play that found a violation, else the first; Others are the rest.
func Merge(reps []*Report) *Report {
	if len(reps) == 1 {
		return reps[0]
	}
	main, play := reps[0], 1
	for i, r := range reps {
		if len(r.Violations) > 0 {
			main, play = r, i+1
			break
		}
	}
	out := *main
	out.Play, out.Plays = play, len(reps)
	out.Others = nil
	viol, unj := map[vocab.Kind]bool{}, map[vocab.Kind]bool{}
	why := map[vocab.Kind]Finding{}
	for _, r := range reps {
		if r != main {
			out.Others = append(out.Others, r.History)
			out.Untracked = append(out.Untracked, r.Untracked...)
			out.ForeignReleases = append(out.ForeignReleases, r.ForeignReleases...)
			out.ForeignRenewals = append(out.ForeignRenewals, r.ForeignRenewals...)
			out.Overlaps = append(out.Overlaps, r.Overlaps...)
			out.Oversold = max(out.Oversold, r.Oversold)
			if r.Disagree != "" && out.Disagree == "" {
				out.Disagree = r.Disagree
			}
			if out.TimedOut == "" {
				out.TimedOut = r.TimedOut
			}
		}
		for _, k := range r.Violations {
			viol[k] = true
		}
		for _, k := range r.Unjudged {
			unj[k] = true
		}
		for _, f := range r.Explain {
			if _, ok := why[f.Kind]; !ok {
				why[f.Kind] = f
			}
		}
	}
	out.Violations, out.Unjudged, out.Explain = []vocab.Kind{}, []vocab.Kind{}, nil
	for _, k := range vocab.Kinds {
		if viol[k] {
			out.Violations = append(out.Violations, k)
			out.Explain = append(out.Explain, why[k])
			if !slices.Contains(out.Found, k) {
				out.Found = append(out.Found, k)
			}
		}
		if unj[k] {
			out.Unjudged = append(out.Unjudged, k)
		}
	}
	return &out
}

// JudgeCell judges a saved cell: its history and the other plays' (Report.Others), merged as Run
// merges them.
func JudgeCell(h *history.History, others []*history.History) *Report {
	reps := []*Report{Judge(h)}
	for _, o := range others {
		reps = append(reps, Judge(o))
	}
	rep := Merge(reps)
	return rep
}
