package referee

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// Report is what a referee found in one run.
type Report struct {
	Step             string       `json:"step"`
	Scenario         string       `json:"scenario"`
	What             string       `json:"what,omitempty"` // what the scenario does, in one sentence
	Judged           []vocab.Kind `json:"judged"`         // the kinds the scenario judges
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
	Starvations      []Starve     `json:"starvations"`
	IdleShare        float64      `json:"idle_share"`      // the time the lock sat idle while buyers waited, the longest gap aside, as a share of the time from the first release to the last
	IdleReleases     int          `json:"idle_releases"`   // releases after which the lock sat free longer than a woken waiter needs
	WaitedReleases   int          `json:"waited_releases"` // releases a buyer waited across
	StuckOwner       int          `json:"stuck_owner,omitempty"`
	Stuck            bool         `json:"stuck"`
	FailedOver       bool         `json:"failed_over"`
	Commands         int          `json:"commands"`
	CommandsPerOrder float64      `json:"commands_per_order"`
	Found            []vocab.Kind `json:"found"`      // every kind seen, judged or not
	Violations       []vocab.Kind `json:"violations"` // the kinds the scenario judges that were seen
	Explain          []Finding    `json:"explain"`    // one sentence for each violation
	// Untracked is what the referee could not observe, with the kinds each leaves unjudged.
	Untracked []Blind `json:"untracked"`
	// TimedOut says the run did not finish in time: buyers were still ordering at its deadline.
	TimedOut string `json:"timed_out,omitempty"`
	// Unjudged lists the judged kinds the referee could not judge in this run (see Untracked and
	// TimedOut): a verdict on them would rest on partial evidence, so there is none.
	Unjudged []vocab.Kind `json:"unjudged"`
	// Notes says what of the scenario did not happen as staged, and why that is no gap in the
	// verdict (a failover with no lock write to lose).
	Notes []string `json:"notes,omitempty"`
	// Linearizable is the second checker's verdict on the shop (porcupine, see second.go), in
	// words in SecondOpinion; Disagree says where it and the referee part, and why ("" when they
	// agree).
	Linearizable  bool   `json:"linearizable"`
	SecondOpinion string `json:"second_opinion"`
	Disagree      string `json:"disagree,omitempty"`
	// History is the run as data: Judge(History) gives this report again.
	History *history.History `json:"history,omitempty"`
	// Play and Plays say which play of how many History is, where the scenario played several
	// (0 where it played once).
	Play  int `json:"play,omitempty"`
	Plays int `json:"plays,omitempty"`
	// Others are the histories of the scenario's other plays (unlock-race tries each gap of the
	// holder's unlock in a play of its own): the cell's verdict is every play's, together.
	Others []*history.History `json:"others,omitempty"`
}

// Finding explains one violation in plain words, and names the buyers the sentence is about.
type Finding struct {
	Kind     vocab.Kind `json:"kind"`
	Sentence string     `json:"sentence"`
	Buyers   []int      `json:"buyers,omitempty"`
}

// Report judges the run so far for its scenario's kinds (every kind for a live session).
func (r *Referee) Report() *Report {
	sc := r.h.Scenario
	buyers := 0
	for n := range r.procs {
		buyers = max(buyers, n)
	}
	final := r.shelf
	if r.final != nil && *r.final >= 0 {
		final = *r.final
	}
	rep := &Report{
		Step: r.h.Step, Scenario: string(sc), Backend: r.h.Backend, Buyers: buyers,
		InitialStock: r.h.Stock, FinalStock: final, Confirmed: r.confirmed,
		Overlaps: slices.Clone(r.overlaps), ForeignReleases: slices.Clone(r.foreign), LostSales: slices.Clone(r.lost),
		ReentryFailures: slices.Clone(r.reentry), FailedOver: r.failedOver, Commands: r.commands, TimedOut: r.timedOut,
		Starvations: r.starvations(), IdleShare: r.idleShare(), Untracked: slices.Clone(r.blinds),
		Notes: slices.Clone(r.notes), History: r.History(),
	}
	if r.nowhere != "" {
		rep.TimedOut = r.nowhere
	}
	rep.Oversold = max(0, r.confirmed-(r.h.Stock-final))
	rep.Linearizable, rep.SecondOpinion, rep.Disagree = secondOpinion(rep.History, rep.Oversold, len(r.overlaps))
	rep.CommandsPerOrder = float64(r.commands) / float64(max(r.confirmed, 1))
	st := r.stuck
	rep.Stuck, rep.StuckOwner = st.stuck, st.owner
	found := map[vocab.Kind]string{}
	who := map[vocab.Kind][]int{}
	if len(r.overlaps) > 0 {
		found[vocab.Overlap] = r.overlaps[0].String()
		who[vocab.Overlap] = []int{r.overlaps[0].A, r.overlaps[0].B}
		who[vocab.Oversold] = who[vocab.Overlap]
	}
	if rep.Oversold > 0 {
		found[vocab.Oversold] = oversoldSentence(r.confirmed, r.h.Stock-final)
	}
	if len(r.foreign) > 0 {
		found[vocab.ForeignRelease] = r.foreign[0].String()
		who[vocab.ForeignRelease] = []int{r.foreign[0].By, r.foreign[0].Owner}
	}
	if st.stuck {
		found[vocab.Stuck] = st.detail
		if st.owner != 0 {
			who[vocab.Stuck] = []int{st.owner}
		}
	} else if r.liveStuckSaid != "" && sc == "" {
		found[vocab.Stuck] = r.liveStuckSaid
	}
	if len(r.lost) > 0 {
		found[vocab.LostSales] = fmt.Sprintf("%d orders were turned away while units remained; first: %s", len(r.lost), r.lost[0])
		who[vocab.LostSales] = []int{r.lost[0].Buyer}
	}
	if len(r.reentry) > 0 {
		found[vocab.ReentryFailed] = r.reentry[0].String()
		who[vocab.ReentryFailed] = []int{r.reentry[0].Buyer}
	}
	if rep.CommandsPerOrder > vocab.FloodLimit {
		found[vocab.Flood] = floodSentence(r.commands, r.confirmed)
	}
	if len(rep.Starvations) > 0 {
		found[vocab.Starved] = rep.Starvations[0].String()
		who[vocab.Starved] = []int{rep.Starvations[0].Buyer}
	}
	rep.IdleReleases, rep.WaitedReleases = r.idleGaps()
	if rep.IdleShare > vocab.IdleLimit {
		found[vocab.Idle] = idleSentence(rep.IdleShare, rep.IdleReleases, rep.WaitedReleases)
	}
	judged := map[vocab.Kind]bool{}
	for _, k := range r.h.Kinds() {
		judged[k] = true
	}
	rep.What, rep.Judged = r.h.What, slices.Clone(r.h.Kinds())
	blind := map[vocab.Kind]bool{}
	for _, b := range r.blinds {
		for _, k := range b.Kinds {
			blind[k] = true
		}
	}
	if judged[vocab.Stuck] && !st.probed && final > 0 && sc != "" {
		why := st.detail
		if why == "" {
			why = "the run did not finish"
		}
		blind[vocab.Stuck] = true
		rep.Untracked = append(rep.Untracked, Blind{Kinds: []vocab.Kind{vocab.Stuck}, What: "the referee could not probe the lock at the end: " + why})
	}
	rep.Found, rep.Violations, rep.Unjudged = []vocab.Kind{}, []vocab.Kind{}, []vocab.Kind{}
	for _, k := range vocab.Kinds {
		if judged[k] && (blind[k] || rep.TimedOut != "") {
			rep.Unjudged = append(rep.Unjudged, k)
		}
		s, ok := found[k]
		if !ok {
			continue
		}
		rep.Found = append(rep.Found, k)
		if judged[k] {
			rep.Violations = append(rep.Violations, k)
			rep.Explain = append(rep.Explain, Finding{Kind: k, Sentence: s, Buyers: who[k]})
		}
	}
	for _, p := range []*[]Overlap{&rep.Overlaps} {
		if *p == nil {
			*p = []Overlap{}
		}
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
	if rep.Starvations == nil {
		rep.Starvations = []Starve{}
	}
	if rep.Untracked == nil {
		rep.Untracked = []Blind{}
	}
	return rep
}

// starvations are the orders that starved: those whose wait is over, and those still waiting as
// the run ends (passed by the orders that began after them and got in).
func (r *Referee) starvations() []Starve {
	out := slices.Clone(r.starved)
	for _, o := range r.ranked {
		if o.waiting() {
			if n := r.passes(o); n >= vocab.StarveLimit {
				out = append(out, Starve{Buyer: o.buyer, Passed: n, At: r.h.Records[len(r.h.Records)-1].At})
			}
		}
	}
	return out
}

// Complete reports whether the referee could judge every kind the scenario judges. Hazard: an
// incomplete report's verdict rests on partial evidence; tests fail it, and the lab says so.
func (rep *Report) Complete() bool { return len(rep.Unjudged) == 0 }

// Headline is the first violation in one sentence, with the oversold units where there are any:
// "buyer 3 and buyer 7 were both inside the critical section for 140 ms; 2 units oversold".
func (rep *Report) Headline() string {
	if !rep.Complete() {
		return "no verdict: " + rep.Why()
	}
	if len(rep.Explain) == 0 {
		return "no violation: every judged invariant held"
	}
	s := rep.Explain[0].Sentence
	if rep.Explain[0].Kind == vocab.Overlap && rep.Oversold > 0 {
		s += fmt.Sprintf("; %d oversold", rep.Oversold)
	}
	return s
}

// Why says in one line what kept the referee from judging: the timeout, or the first thing it
// could not see.
func (rep *Report) Why() string {
	if rep.TimedOut != "" {
		return rep.TimedOut
	}
	for _, b := range rep.Untracked {
		return b.What
	}
	return ""
}

// Text renders the report in words.
func (rep *Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %s, scenario %s (%s backend, %d buyers)\n", rep.Step, rep.Scenario, rep.Backend, rep.Buyers)
	if rep.What != "" {
		fmt.Fprintf(&b, "  what happens: %s\n", rep.What)
	}
	if rep.Plays > 1 {
		fmt.Fprintf(&b, "  play %d of %d is told here; the verdict is every play's\n", rep.Play, rep.Plays)
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
	judged := func(k vocab.Kind) bool {
		return slices.Contains(rep.Judged, k)
	}
	if judged(vocab.Starved) {
		for _, s := range rep.Starvations {
			fmt.Fprintf(&b, "  starved: %s\n", s)
		}
	}
	if judged(vocab.Idle) {
		fmt.Fprintf(&b, "  the lock sat free for %.1f%% of the time while buyers waited for it, the longest gap aside (limit %.0f%%); idle after %d of %d releases\n", 100*rep.IdleShare, 100*vocab.IdleLimit, rep.IdleReleases, rep.WaitedReleases)
	}
	var also []vocab.Kind
	for _, k := range rep.Found {
		if !judged(k) {
			also = append(also, k)
		}
	}
	if len(also) > 0 {
		fmt.Fprintf(&b, "  also seen, not judged by %s: %s\n", rep.Scenario, joinKinds(also))
	}
	if rep.TimedOut != "" {
		fmt.Fprintf(&b, "  timed out: %s\n", rep.TimedOut)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if rep.SecondOpinion != "" {
		fmt.Fprintf(&b, "  second checker (porcupine, the shop as atomic sales): %s\n", rep.SecondOpinion)
	}
	if rep.Disagree != "" {
		fmt.Fprintf(&b, "  the checkers disagree: %s\n", rep.Disagree)
	}
	for _, u := range rep.Untracked {
		fmt.Fprintf(&b, "  not seen (%s unjudged): %s\n", joinKinds(u.Kinds), u.What)
	}
	switch {
	case !rep.Complete():
		fmt.Fprintf(&b, "verdict: ? the referee could not judge %s\n", joinKinds(rep.Unjudged))
	case len(rep.Violations) == 0:
		fmt.Fprintf(&b, "verdict: ✓ none of %s happened\n", joinKinds(rep.Judged))
	}
	if len(rep.Violations) > 0 {
		fmt.Fprintf(&b, "verdict: ✗ %s\n", joinKinds(rep.Violations))
		for _, f := range rep.Explain {
			fmt.Fprintf(&b, "  %s: %s\n", f.Kind, f.Sentence)
		}
	}
	return b.String()
}

func joinKinds(ks []vocab.Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func floodSentence(commands, confirmed int) string {
	if confirmed == 0 {
		return fmt.Sprintf("%d Redis commands and no order confirmed yet (limit %d per order)", commands, vocab.FloodLimit)
	}
	return fmt.Sprintf("%d Redis commands for %d confirmed orders: %.0f per order (limit %d)",
		commands, confirmed, float64(commands)/float64(confirmed), vocab.FloodLimit)
}
