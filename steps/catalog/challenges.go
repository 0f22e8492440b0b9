package catalog

import (
	"strings"

	"github.com/lockstep-lab/lockstep/steps"
)

// Challenge is a step's challenge in drive mode (internal/drive, lab drive): the break its row
// shows, said as a goal the learner reaches by scheduling the buyers' commands by hand, and the
// par, the fewest moves known to reach it, kept as a solution the lab can play (lab drive -solve)
// and hint from. The goal is reached when the referee announces Goal.
type Challenge struct {
	Goal steps.Kind
	// Says is the goal in words: "make two buyers sell the same unit".
	Says string
	// Scenario is the break of the row the goal is: the step that fixes the challenge is the one
	// whose row clears Goal under it.
	Scenario steps.Scenario
	// Solution is the par solution, in moves as lab drive -moves reads them; for a step that holds,
	// a try that shows it holding.
	Solution string
	// Holds: the step cannot be broken so (17): the challenge is to try.
	Holds bool
}

// Par is the fewest moves known to reach the goal: the solution's.
func (c Challenge) Par() int { return len(strings.Fields(c.Solution)) }

// The goals, said once.
const (
	sellTwice   = "make two buyers sell the same unit"
	deleteOther = "make buyer 1 delete buyer 2's lock"
)

// challenges are the steps' challenges, by slug: each goal is the break of the step's own row
// (BreakWith, or the break its Breaks says where BreakWith is a kind drive mode does not judge),
// each solution the fewest moves known, found by hand in lab drive. A solution that needs a fault
// says so with its key (e, x, f, t, i, p, k).
var challenges = map[string]Challenge{
	"01_naive": {Goal: steps.Oversold, Says: sellTwice, Scenario: steps.Contention,
		Solution: "1 2 w 1 2"},
	"02_setnx": {Goal: steps.Stuck, Says: "leave the lock held by an order that is over (e: its work fails)", Scenario: steps.Error,
		Solution: "1 1 e"},
	"03_finally": {Goal: steps.Stuck, Says: "leave the lock held by nobody alive (x: a crash)", Scenario: steps.Crash,
		Solution: "1 x"},
	"04_atomic_ttl": {Goal: steps.ForeignRelease, Says: deleteOther + ": let its lease run out before it is done", Scenario: steps.Slow,
		Solution: "1 1 w w w w 2 1 1"},
	"side_getset": {Goal: steps.Overlap, Says: "let a buyer whose clock runs ahead (k) take over a lock that is still held", Scenario: steps.ClockSkew,
		Solution: "1 1 1 k 3 3 3 3 3 w 1 3"},
	"05_owner": {Goal: steps.ForeignRelease, Says: deleteOther + ", though it checks the lock is its own first", Scenario: steps.UnlockRace,
		Solution: "1 1 w 1 1 w w w 2 1"},
	"06_reentrant": {Goal: steps.LostSales, Says: "turn a buyer away while units remain", Scenario: steps.Contention,
		Solution: "1 2"},
	"07_spin": {Goal: steps.Oversold, Says: sellTwice + ": the holder's work outlasts its lease", Scenario: steps.Slow,
		Solution: "1 1 w w w w 2 2 w 1 2"},
	"08_watchdog": {Goal: steps.ForeignRelease, Says: deleteOther + ", though a watchdog renews it", Scenario: steps.UnlockRace,
		Solution: "1 1 w 1 1 w w w 2 1"},
	"09_lua_unlock": {Goal: steps.Oversold, Says: sellTwice + ": fail the lock over (f) after buyer 1's lock write", Scenario: steps.Failover,
		Solution: "f 1 2 1 2 w 1 1 w 2"},
	"side_delex": {Goal: steps.Oversold, Says: sellTwice + ": fail the lock over (f) after buyer 1's lock write", Scenario: steps.Failover,
		Solution: "f 1 2 1 2 w 1 1 w 2"},
	"side_wait": {Goal: steps.Oversold, Says: sellTwice + ", though a replica has the lock: stop buyer 1's world (p) just before its write", Scenario: steps.Pause,
		Solution: "1 1 1 p w w w w + 3 3 3 w 1 1 w 3"},
	"10_retry_jitter": {Goal: steps.Oversold, Says: "make two requests of one buyer (t) sell the same unit", Scenario: steps.TwoRequests,
		Solution: "1 1 t 1 w 1 w 1"},
	"11_hash_owner": {Goal: steps.Oversold, Says: sellTwice + ": cut buyer 1 off from the lock server (i) while it works", Scenario: steps.Partition,
		Solution: "1 1 i w w w w 2 2 w 1 1 w 2"},
	"side_aspect": {Goal: steps.Stuck, Says: "leave the lock held by an order that is over (e: its work fails)", Scenario: steps.Error,
		Solution: "1 1 e"},
	"12_lease_guard": {Goal: steps.Oversold, Says: sellTwice + ": stop buyer 1's world (p) just before its write", Scenario: steps.Pause,
		Solution: "1 1 p w w w w + 3 3 w 1 1 w 3"},
	"13_pubsub": {Goal: steps.Starved, Says: "let three buyers whose orders came after buyer 1's get the lock before it", Scenario: steps.Greedy,
		Solution: "2 1 2 + w 2 2 3 3 + w 3 3 4 4"},
	"14_fair": {Goal: steps.Oversold, Says: sellTwice + ": stop buyer 1's world (p) just before its write", Scenario: steps.Pause,
		Solution: "1 1 p w w w w + 3 3 w 1 1 w 3"},
	"15_redlock": {Goal: steps.Oversold, Says: sellTwice + ", on a majority of three lock nodes: stop buyer 1's world (p)", Scenario: steps.Pause,
		Solution: "1 1 1 1 p w w w w + 3 3 3 3 w 1 1 1 1 w 3"},
	"16_fencing": {Goal: steps.Oversold, Says: sellTwice + " past the fencing token: fail the lock over (f)", Scenario: steps.Failover,
		Solution: "f 1 2 1 2 w 1 1 w 2"},
	"17_atomic_stock": {Goal: steps.Oversold, Says: "try to oversell it", Scenario: steps.Contention, Holds: true,
		Solution: "w 1 2"},
}

// ChallengeOf is the challenge of the step slug; false when it has none (a learner's own lock).
func ChallengeOf(slug string) (Challenge, bool) {
	c, ok := challenges[slug]
	return c, ok
}
