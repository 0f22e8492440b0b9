package explore_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/arena"
	"github.com/lockstep-lab/lockstep/internal/explore"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/lockstep-lab/lockstep/steps/catalog"
)

// bubble plays f in a synctest bubble of t, with the randomness a lock draws for itself seeded
// afresh: crypto/rand (owner tokens) always, math/rand/v2 (back-off jitter) in a build with the
// lockstep_seeded tag (explore.SeedMathRand), as the grader lab explore plays in is built.
func bubble(t *testing.T) func(func()) {
	return func(f func()) {
		synctest.Test(t, func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, 1)
			explore.SeedMathRand(1)
			f()
		})
	}
}

func step(t *testing.T, s string) *steps.Step {
	t.Helper()
	st, err := catalog.Find(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestGenerateIsAFunctionOfTheSeed: a seed writes one program, from the fault mix it drew
// first (swarm), within its limits: at most the mix's buyers, faults only of the mix, at most
// one move on a lock node, a crash or a second request as its buyer's last order, and the quiet
// tail. Across seeds the mixes differ: some programs have every order struck by one fault, some
// no fault at all; and -faults none (an empty list) turns none on.
func TestGenerateIsAFunctionOfTheSeed(t *testing.T) {
	noLeak(t)
	distinct, mixes := map[string]bool{}, map[string]bool{}
	faultless, oneFault := 0, 0
	for seed := uint64(1); seed <= 500; seed++ {
		l := explore.Limits{Buyers: 1 + int(seed%4), Nodes: 1 + 2*int(seed%2)}
		p, q := explore.Generate(seed, l), explore.Generate(seed, l)
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("seed %d wrote two programs:\n%+v\n%+v", seed, p, q)
		}
		if m := explore.DrawMix(seed, l); p.Mix == nil || !reflect.DeepEqual(*p.Mix, m) {
			t.Fatalf("seed %d: the program's mix %v is not the seed's %v", seed, p.Mix, m)
		}
		b, _ := json.Marshal(p.Buyers)
		distinct[string(b)] = true
		mixes[p.Mix.String()] = true
		buyers, faults := p.Size()
		if buyers < 1 || buyers > p.Mix.Buyers || p.Mix.Buyers > l.Buyers || p.Stock < 1 || p.Tail != explore.QuietTail {
			t.Fatalf("seed %d: %d buyers (mix %d, limit %d), stock %d, tail %d", seed, buyers, p.Mix.Buyers, l.Buyers, p.Stock, p.Tail)
		}
		on := map[history.Fault]bool{}
		for _, r := range p.Mix.Rates {
			on[r.Fault] = true
		}
		nodeMoves, kinds := 0, map[history.Fault]bool{}
		for _, b := range p.Buyers {
			if b.Missing && (l.Nodes < 3 || !on[explore.FaultMissing]) || b.Skew > 0 && !on[arena.FaultClockSkew] {
				t.Fatalf("seed %d: a buyer's fault the mix has not (nodes %d): %+v", seed, l.Nodes, b)
			}
			for k, o := range b.Orders {
				if o.Fault == "" {
					continue
				}
				kinds[o.Fault] = true
				if !on[o.Fault] {
					t.Fatalf("seed %d: %s armed, which the mix has not: %v", seed, o.Fault, p.Mix)
				}
				if o.Fault == arena.FaultFailover || o.Fault == arena.FaultRestart {
					nodeMoves++
				}
				if (o.Fault == arena.FaultCrash || o.Fault == arena.FaultSecond) && k != len(b.Orders)-1 {
					t.Fatalf("seed %d: a %s before the buyer's last order", seed, o.Fault)
				}
			}
		}
		if nodeMoves > 1 {
			t.Fatalf("seed %d: %d moves on a lock node", seed, nodeMoves)
		}
		switch {
		case faults == 0:
			faultless++
		case len(kinds) == 1 && faults >= 2:
			oneFault++
		}
	}
	if len(distinct) < 400 || len(mixes) < 300 || faultless < 25 || oneFault < 25 {
		t.Fatalf("500 seeds wrote %d distinct programs from %d distinct mixes, %d with no fault, %d with one fault struck twice or more", len(distinct), len(mixes), faultless, oneFault)
	}
	for seed := uint64(1); seed <= 100; seed++ {
		if _, faults := explore.Generate(seed, explore.Limits{Nodes: 3, Faults: []history.Fault{}}).Size(); faults > 0 {
			t.Fatalf("seed %d: %d faults with none asked for", seed, faults)
		}
	}
}

// tokens are what a lock draws at random for itself (owner tokens, request ids): a run's history
// is the same as another's when they differ in these alone, each drawn at the same place.
var tokens = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}`)

// canonical is h as JSON, a record a line, with each of the lock's random tokens named by its
// first appearance, and the records of one simulated instant in the order of their text: two
// goroutines runnable at one instant (a buyer and the idle probe) race, and the arena records what
// each did in the order they ran.
func canonical(t *testing.T, h *history.History) string {
	names := map[string]string{}
	var lines []string
	for _, r := range h.Records {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, tokens.ReplaceAllStringFunc(string(b), func(s string) string {
			if _, ok := names[s]; !ok {
				names[s] = fmt.Sprintf("token%d", len(names)+1)
			}
			return names[s]
		}))
	}
	at := func(i int) time.Duration { return h.Records[i].At }
	idx := make([]int, len(lines))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if at(idx[a]) != at(idx[b]) {
			return at(idx[a]) < at(idx[b])
		}
		return lines[idx[a]] < lines[idx[b]]
	})
	var out strings.Builder
	for _, i := range idx {
		out.WriteString(lines[i] + "\n")
	}
	return out.String()
}

// TestASeedIsOneRun: the same seed plays the same program to the same verdict, and to the same
// history — the same records at the same simulated instants, but for the lock's own random tokens
// — where nothing random decides a moment: not on a lock that sleeps a random back-off (10–16 draw
// it from math/rand/v2, which nobody can seed), and not after a failover or a restart, whose
// closed connections go-redis dials again after a back-off with random jitter (MinRetryBackoff);
// there the verdict is the same.
func TestASeedIsOneRun(t *testing.T) {
	noLeak(t)
	exact := 0
	for _, slug := range []string{"05", "09", "13"} {
		st := step(t, slug)
		for seed := uint64(1); seed <= 12; seed++ {
			l := explore.Limits{Buyers: 3, Nodes: st.Nodes}
			p := explore.Generate(seed, l)
			if q := explore.Generate(seed, l); !reflect.DeepEqual(p, q) {
				t.Fatalf("seed %d wrote two programs", seed)
			}
			r1, err := explore.Run(st, p, nil, bubble(t))
			if err != nil {
				t.Fatal(err)
			}
			r2, err := explore.Run(st, p, nil, bubble(t))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r1.Violations, r2.Violations) || !slices.Equal(r1.Unjudged, r2.Unjudged) {
				t.Errorf("%s, seed %d: one program judged %v (unjudged %v), then %v (unjudged %v)", st.Slug, seed, r1.Violations, r1.Unjudged, r2.Violations, r2.Unjudged)
			}
			if slug == "13" || moves(p, arena.FaultFailover, arena.FaultRestart) {
				continue
			}
			exact++
			if a, b := canonical(t, r1.History), canonical(t, r2.History); a != b {
				t.Errorf("%s, seed %d: two runs of one program differ:\n%s\n%s", st.Slug, seed, a, b)
			}
		}
	}
	if exact < 12 {
		t.Fatalf("only %d programs were held to their history: too few", exact)
	}
}

// moves reports whether p arms any of fs.
func moves(p explore.Program, fs ...history.Fault) bool {
	for _, b := range p.Buyers {
		for _, o := range b.Orders {
			if slices.Contains(fs, o.Fault) {
				return true
			}
		}
	}
	return false
}

// TestShrinkKeepsWhatBreaks: Shrink takes away everything the break does not need — buyers,
// orders, faults, skews, waits, work, units — and keeps what it does, here a pause in buyer 2's
// second order that breaks when a buyer comes after it.
func TestShrinkKeepsWhatBreaks(t *testing.T) {
	noLeak(t)
	p := explore.Program{Seed: 9, Stock: 4, Buyers: []explore.Buyer{
		{Skew: 24, Orders: []explore.Order{{After: 5, Work: 3, Fault: arena.FaultSlow}, {After: 2}}},
		{Orders: []explore.Order{{After: 7}, {After: 3, Work: 8, Fault: arena.FaultPause}}},
		{Orders: []explore.Order{{After: 15, Work: 1, Fault: arena.FaultCrash}}},
	}}
	breaks := func(q explore.Program) bool {
		pause := false
		for _, b := range q.Buyers {
			for _, o := range b.Orders {
				pause = pause || o.Fault == arena.FaultPause
			}
		}
		return pause && len(q.Buyers) >= 2
	}
	got, tries := explore.Shrink(p, explore.ShrinkTries, breaks)
	want := explore.Program{Stock: 1, Buyers: []explore.Buyer{
		{Orders: []explore.Order{{Fault: arena.FaultPause}}}, // buyer 2's second order, once buyer 1 and an order went
		{Orders: []explore.Order{{}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shrunk to %+v in %d tries, want %+v", got, tries, want)
	}
	if _, n := explore.Shrink(p, 3, breaks); n != 3 {
		t.Fatalf("Shrink played %d candidates with 3 allowed", n)
	}
}

// pauseFound is what lab explore -faults pause -kinds overlap 16 found from seed 1 and shrank to:
// two buyers at the start, the first paused just before its stock write. Held as a regression case.
var pauseFound = explore.Program{Stock: 1, Buyers: []explore.Buyer{
	{Orders: []explore.Order{{Fault: arena.FaultPause}}},
	{Orders: []explore.Order{{}}},
}}

// TestAFoundProgramIsARegressionCase: a program explore found is data a test holds: the fencing
// token of 16 turns the pause into two buyers inside and a refused write (overlap, not oversold);
// 09, which has no token, oversells; 17 takes no lock and sells atomically, so the pause breaks
// nothing.
func TestAFoundProgramIsARegressionCase(t *testing.T) {
	noLeak(t)
	for _, tc := range []struct {
		step string
		want []steps.Kind
	}{
		{"16", []steps.Kind{steps.Overlap}},
		{"09", []steps.Kind{steps.Overlap, steps.Oversold}},
		{"17", nil},
	} {
		rep, err := explore.Run(step(t, tc.step), pauseFound, []steps.Kind{steps.Overlap, steps.Oversold}, bubble(t))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Complete() || !slices.Equal(rep.Violations, tc.want) && len(tc.want)+len(rep.Violations) > 0 {
			t.Errorf("%s under the found pause: %v (unjudged %v), want %v", tc.step, rep.Violations, rep.Unjudged, tc.want)
		}
	}
}

// starvedFound is what lab explore 17 found from seed 1 (program 78) and shrank to, when the
// referee counted an order's own work as waiting: buyer 2 works half a TTL before its atomic sale
// while buyer 1's two orders and buyer 3's, begun meanwhile, sell; it was called starved.
var starvedFound = explore.Program{Stock: 1, Buyers: []explore.Buyer{
	{Orders: []explore.Order{{After: 1, Fault: arena.FaultSecond}}},
	{Orders: []explore.Order{{Work: 4}}},
	{Orders: []explore.Order{{}}},
}}

// TestABusyOrderIsNotStarved: step 17 takes no lock, so nobody waits for one; an order at its own
// work while later orders sell is busy, not starved (the referee's passes).
func TestABusyOrderIsNotStarved(t *testing.T) {
	noLeak(t)
	rep, err := explore.Run(step(t, "17"), starvedFound, nil, bubble(t)) // judged for every kind
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete() || len(rep.Violations) > 0 {
		t.Errorf("17 under the found program: %v (unjudged %v), want nothing\n%s", rep.Violations, rep.Unjudged, rep.Text())
	}
}
