package sim

import (
	"fmt"
	"strings"

	"github.com/lockstep-lab/lockstep/steps"
)

// Report is what a referee found in one run.
type Report struct {
	Step             string       `json:"step"`
	Scenario         string       `json:"scenario"`
	Backend          string       `json:"backend"`
	Buyers           int          `json:"buyers"`
	InitialStock     int          `json:"initial_stock"`
	FinalStock       int          `json:"final_stock"`
	Confirmed        int          `json:"confirmed"`
	Oversold         int          `json:"oversold"`
	Overlaps         []Overlap    `json:"overlaps"`
	ForeignReleases  []Foreign    `json:"foreign_releases"`
	LostSales        []Rejection  `json:"lost_sales"`
	ReentryFailures  []Reentry    `json:"reentry_failures"`
	StuckOwner       int          `json:"stuck_owner,omitempty"`
	Stuck            bool         `json:"stuck"`
	FailedOver       bool         `json:"failed_over"`
	Commands         int          `json:"commands"`
	CommandsPerOrder float64      `json:"commands_per_order"`
	Found            []steps.Kind `json:"found"`      // every kind seen, judged or not
	Violations       []steps.Kind `json:"violations"` // the kinds the scenario judges that were seen
	Explain          []Finding    `json:"explain"`    // one sentence for each violation
}

// Finding explains one violation in plain words.
type Finding struct {
	Kind     steps.Kind `json:"kind"`
	Sentence string     `json:"sentence"`
}

func (r *referee) report(a *Arena, sc steps.Scenario, final int, held bool) *Report {
	rep := &Report{
		Step: a.step.Slug, Scenario: string(sc), Backend: a.env.Backend(), Buyers: len(a.procs),
		InitialStock: r.initial, FinalStock: final, Confirmed: r.confirmed,
		Overlaps: r.overlaps, ForeignReleases: r.foreign, LostSales: r.lost, ReentryFailures: r.reentry,
		FailedOver: r.failedOver, Commands: r.commands,
	}
	if final < 0 {
		final = r.shelf
		rep.FinalStock = final
	}
	rep.Oversold = max(0, r.confirmed-(r.initial-final))
	rep.CommandsPerOrder = float64(r.commands) / float64(max(r.confirmed, 1))
	if held && final > 0 {
		rep.Stuck, rep.StuckOwner = true, r.owner
	}
	found := map[steps.Kind]string{}
	if len(r.overlaps) > 0 {
		found[steps.Overlap] = r.overlaps[0].String()
	}
	if rep.Oversold > 0 {
		found[steps.Oversold] = oversoldSentence(r.confirmed, r.initial-final)
	}
	if len(r.foreign) > 0 {
		found[steps.ForeignRelease] = r.foreign[0].String()
	}
	if rep.Stuck {
		who := "a finished or dead owner"
		if r.owner != 0 {
			who = fmt.Sprintf("buyer %d, which is no longer ordering,", r.owner)
		}
		found[steps.Stuck] = fmt.Sprintf("the lock is still held by %s while %d units remain: nobody can buy them", who, final)
	}
	if len(r.lost) > 0 {
		found[steps.LostSales] = fmt.Sprintf("%d orders were turned away while units remained; first: %s", len(r.lost), r.lost[0])
	}
	if len(r.reentry) > 0 {
		found[steps.ReentryFailed] = r.reentry[0].String()
	}
	if rep.CommandsPerOrder > steps.FloodLimit {
		found[steps.Flood] = floodSentence(r.commands, r.confirmed)
	}
	judged := map[steps.Kind]bool{}
	for _, k := range steps.Judges[sc] {
		judged[k] = true
	}
	rep.Found, rep.Violations = []steps.Kind{}, []steps.Kind{}
	for _, k := range steps.Kinds {
		s, ok := found[k]
		if !ok {
			continue
		}
		rep.Found = append(rep.Found, k)
		if sc == "" || judged[k] {
			rep.Violations = append(rep.Violations, k)
			rep.Explain = append(rep.Explain, Finding{Kind: k, Sentence: s})
		}
	}
	if rep.Overlaps == nil {
		rep.Overlaps = []Overlap{}
	}
	if rep.ForeignReleases == nil {
		rep.ForeignReleases = []Foreign{}
	}
	if rep.LostSales == nil {
		rep.LostSales = []Rejection{}
	}
	if rep.ReentryFailures == nil {
		rep.ReentryFailures = []Reentry{}
	}
	return rep
}

// Headline is the first violation in one sentence, with the oversold units where there are any:
// "buyer 3 and buyer 7 were both inside the critical section for 140 ms; 2 units oversold".
func (rep *Report) Headline() string {
	if len(rep.Explain) == 0 {
		return "no violation: every judged invariant held"
	}
	s := rep.Explain[0].Sentence
	if rep.Explain[0].Kind == steps.Overlap && rep.Oversold > 0 {
		s += fmt.Sprintf("; %d oversold", rep.Oversold)
	}
	return s
}

// Text renders the report in words.
func (rep *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s, scenario %s (%s backend, %d buyers)\n", rep.Step, rep.Scenario, rep.Backend, rep.Buyers)
	if d, ok := steps.Describe[steps.Scenario(rep.Scenario)]; ok {
		fmt.Fprintf(&b, "  what happens: %s\n", d)
	}
	fmt.Fprintf(&b, "  stock: %d → %d; orders confirmed: %d; oversold units: %d\n",
		rep.InitialStock, rep.FinalStock, rep.Confirmed, rep.Oversold)
	if rep.Confirmed == 0 {
		fmt.Fprintf(&b, "  Redis commands: %d (no order confirmed)\n", rep.Commands)
	} else {
		fmt.Fprintf(&b, "  Redis commands: %d (%.1f per confirmed order)\n", rep.Commands, rep.CommandsPerOrder)
	}
	if rep.FailedOver {
		b.WriteString("  the lock primary failed over to its replica\n")
	}
	const most = 5 // a run of many buyers overlaps pairwise; the first few tell the story
	for i, o := range rep.Overlaps {
		if i == most {
			fmt.Fprintf(&b, "  … and %d more overlapping pairs\n", len(rep.Overlaps)-most)
			break
		}
		fmt.Fprintf(&b, "  overlap: %s (from %s to %s)\n", o, ms(o.From), ms(o.To))
	}
	for _, f := range rep.ForeignReleases {
		fmt.Fprintf(&b, "  foreign release: %s at %s\n", f, ms(f.At))
	}
	if n := len(rep.LostSales); n > 0 {
		fmt.Fprintf(&b, "  lost sales: %d orders turned away while units remained\n", n)
	}
	for _, e := range rep.ReentryFailures {
		fmt.Fprintf(&b, "  reentry failed: %s\n", e)
	}
	if len(rep.Violations) == 0 {
		fmt.Fprintf(&b, "verdict: ✓ none of %s happened\n", judgedList(rep.Scenario))
	} else {
		fmt.Fprintf(&b, "verdict: ✗ %s\n", joinKinds(rep.Violations))
		for _, f := range rep.Explain {
			fmt.Fprintf(&b, "  %s: %s\n", f.Kind, f.Sentence)
		}
	}
	return b.String()
}

func judgedList(sc string) string {
	return joinKinds(steps.Judges[steps.Scenario(sc)])
}

func joinKinds(ks []steps.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func floodSentence(commands, confirmed int) string {
	if confirmed == 0 {
		return fmt.Sprintf("%d Redis commands and no order confirmed yet (limit %d per order)", commands, steps.FloodLimit)
	}
	return fmt.Sprintf("%d Redis commands for %d confirmed orders: %.0f per order (limit %d)",
		commands, confirmed, float64(commands)/float64(confirmed), steps.FloodLimit)
}
