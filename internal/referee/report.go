package referee

import (
	"slices"

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
	ForeignRenewals  []Renewal    `json:"foreign_renewals"`
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
	// verdict (a failover with no lock write to lose); what a lock node refused a command of the
	// lock with (Replies), and goroutines of the lock that outlived the run.
	Notes []string `json:"notes,omitempty"`
	// Replies are the error replies the lock's commands got (ReplyError); FailedByReplies says
	// every order failed while they came, none confirmed.
	Replies         []ReplyError `json:"replies,omitempty"`
	FailedByReplies bool         `json:"failed_by_replies,omitempty"`
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
		Overlaps: slices.Clone(r.overlaps), ForeignReleases: slices.Clone(r.foreign), ForeignRenewals: slices.Clone(r.renewed), LostSales: slices.Clone(r.lost),
		ReentryFailures: slices.Clone(r.reentry), FailedOver: r.failedOver, Commands: r.commands, TimedOut: r.timedOut,
		Starvations: r.starvations(), IdleShare: r.idleShare(), Untracked: slices.Clone(r.blinds),
		Notes: slices.Clone(r.notes), History: r.History(), Replies: slices.Clone(r.replies), FailedByReplies: r.failedByReplies(),
	}
	for _, e := range r.replies {
		rep.Notes = append(rep.Notes, e.String())
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
	if len(r.renewed) > 0 {
		found[vocab.ForeignRenewal] = r.renewed[0].String()
		who[vocab.ForeignRenewal] = []int{r.renewed[0].By, r.renewed[0].Owner}
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
		found[vocab.LostSales] = lostSalesSentence(len(r.lost), r.lost[0])
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
	if judged[vocab.Idle] && r.granted > 0 && len(r.holds) == 0 && !blind[vocab.Idle] {
		// Idle is the time no hold was active while buyers waited: with no hold seen, when the
		// lock sat free is unknown, not never.
		blind[vocab.Idle] = true
		rep.Untracked = append(rep.Untracked, Blind{Kinds: []vocab.Kind{vocab.Idle}, What: noHoldSays(r.granted)})
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
	if rep.ForeignRenewals == nil {
		rep.ForeignRenewals = []Renewal{}
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
		if o.waiting() && !o.starved {
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

// Differs tells whether rep, a saved run judged again, has another verdict than the violations
// and unjudged kinds the run recorded when it was played (lab judge, lab class, a program in the
// terminal lab). Hazard: a run saved without its verdict (violations nil: a bare history) differs
// from none, while a recorded ✓ is an empty, non-nil list.
func (rep *Report) Differs(violations, unjudged []vocab.Kind) bool {
	return violations != nil && (!slices.Equal(orNone(violations), orNone(rep.Violations)) || !slices.Equal(orNone(unjudged), orNone(rep.Unjudged)))
}

// orNone is k, or an empty list for nil: a verdict's kinds compared as lists.
func orNone(k []vocab.Kind) []vocab.Kind {
	if k == nil {
		return []vocab.Kind{}
	}
	return k
}
