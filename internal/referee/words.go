package referee

// The referee's words: every sentence it says — an event as the log, rewind, pages and -json say
// it, a command as the timeline labels it, each finding, the report in words — lives here, so
// one file says how the lab talks.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/vocab"
)

func (c *Command) long() string {
	if c == nil {
		return ""
	}
	return c.Long
}

// isScript reports whether a command runs a script or a function on the server.
func isScript(name string) bool {
	name = strings.ToUpper(name)
	return strings.HasPrefix(name, "EVAL") || strings.HasPrefix(name, "FCALL")
}

// commandOf is the Command of cmds sent to lock node node in call call (0: none, or not known).
func commandOf(cmds []history.Cmd, node, call int, r *facts) *Command {
	if len(cmds) == 0 {
		return nil
	}
	c := &Command{Name: strings.ToUpper(cmds[0].Name), Node: node, Script: isScript(cmds[0].Name)}
	if rc := r.calls[call]; rc != nil {
		c.In = map[bool]string{true: history.CallLock, false: history.CallUnlock}[rc.lock]
	}
	parts := make([]string, 0, len(cmds))
	var long []string
	for _, cmd := range cmds {
		name := strings.ToUpper(cmd.Name)
		if name == "SETNX" {
			c.NX = true
		}
		target := "(lock server)"
		for i, a := range cmd.Args {
			if strings.EqualFold(a, "nx") && i > 0 {
				name += " NX"
				c.NX = true
			}
			if a == r.h.LockKey {
				target, c.OnLock = "lock", true
			} else if _, ok := r.node(node)[a]; ok && target == "(lock server)" {
				target, c.OnLock = a, true
			}
		}
		name += " " + target
		l := name
		if len(r.h.Nodes) > 1 {
			name += fmt.Sprintf(" @%d", node+1)
			l += " on " + r.nodeName(node)
		}
		parts = append(parts, name)
		long = append(long, l)
	}
	c.Label = strings.Join(parts, " + ")
	c.Long = strings.Join(long, " + ")
	if c.Script { // which script it is, by the call it ran in
		switch c.In {
		case history.CallLock:
			c.Label, c.Long = c.Label+" in Lock", c.Long+", in its Lock"
		case history.CallUnlock:
			c.Label, c.Long = c.Label+" in Unlock", c.Long+", in its Unlock"
		case "":
			if call != 0 {
				break // in a call the referee no longer knows: say nothing of it
			}
			c.Label, c.Long = c.Label+" outside Lock/Unlock", c.Long+", outside its Lock and Unlock calls (a renewal, or the handler's own)"
		}
	}
	return c
}

// stockCommand is the Command of a shop operation.
func stockCommand(what string) *Command {
	switch what {
	case history.StockRead, history.StockReadRefused:
		return &Command{Name: "GET", Stock: true, Label: "GET stock", Long: "GET stock"}
	case history.StockSell, history.StockSoldOut:
		return &Command{Name: "EVALSHA", Stock: true, Label: "EVALSHA sell stock", Long: "EVALSHA sell stock"}
	}
	return &Command{Name: "SET", Stock: true, Label: "SET stock", Long: "SET stock"}
}

// errWords is an error as a sentence says it: the steps package's own errors without their
// package's name ("steps: sold out" is "sold out"); any other error as it is.
func errWords(err string) string {
	return strings.TrimPrefix(err, "steps: ")
}

func (e Event) String() string {
	return fmt.Sprintf("%7.1fms %-9s %s", float64(e.At.Microseconds())/1000, e.Kind, e.Words())
}

// Words says the event in plain words: the log, rewind and -json all say it this way.
func (e Event) Words() string {
	who := fmt.Sprintf("buyer %d", e.Buyer)
	if e.Buyer == 0 {
		who = "the end-of-run probe" // it asks for the lock as a new buyer would, once the orders are done
	}
	other := fmt.Sprintf("buyer %d", e.Other)
	on := ""
	if e.On != "" {
		on = " on " + e.On
	}
	switch e.Kind {
	case EvStart:
		return who + " starts an order"
	case EvCommand:
		return who + " sends " + e.Cmd.long()
	case EvLine:
		names := make([]string, len(e.Line))
		for i, b := range e.Line {
			names[i] = "nobody's item"
			if b > 0 {
				names[i] = fmt.Sprintf("buyer %d", b)
			}
		}
		line := "the line (" + e.Channel + ")" + on
		switch {
		case e.Buyer > 0 && len(e.Line) > 0:
			return fmt.Sprintf("%s gets in %s, place %d: %s", who, line, slices.Index(e.Line, e.Buyer)+1, strings.Join(names, ", "))
		case len(e.Line) == 0:
			return line + " is empty"
		}
		return line + " is now: " + strings.Join(names, ", ")
	case EvPublish:
		return fmt.Sprintf("%s's command publishes %q on channel %s%s: whoever subscribed to it wakes", who, e.Sentence, e.Channel, on)
	case EvAcquired:
		if e.Handed {
			return who + " is handed the lock" + on
		}
		return who + " takes the lock" + on
	case EvNested:
		if e.Depth > 1 {
			return fmt.Sprintf("%s's Lock says yes to the lock its process holds: it has entered it %d times, and its hold goes on", who, e.Depth)
		}
		return who + " gives back one entry of its lock: its hold goes on, entered once"
	case EvReleased:
		if e.Left {
			return who + " deletes what was left of its lock" + on + " (its hold had ended on another node)"
		}
		return who + " releases its lock" + on
	case EvForeign:
		if e.Left {
			return fmt.Sprintf("%s deletes what was left of %s's lock%s (that hold had ended on another node)", who, other, on)
		}
		if e.Rewrote {
			return fmt.Sprintf("%s writes over the lock that %s held%s", who, other, on)
		}
		return fmt.Sprintf("%s deletes the lock that %s held%s", who, other, on)
	case EvExpired:
		if e.Left {
			return "what was left of " + other + "'s lock" + on + " runs out (its TTL)"
		}
		if e.Other == 0 {
			return "a key ran out" + on + e.due()
		}
		return other + "'s lock runs out (its TTL)" + on + e.due()
	case EvLost:
		if e.Left {
			return "what was left of " + other + "'s lock" + on + " is lost: the node forgot it"
		}
		return other + "'s lock" + on + " is lost: the node forgot it"
	case EvFree:
		return "nobody holds the lock"
	case EvWaiting:
		if e.Other == e.Buyer {
			return who + " finds the lock held by its own process: another order of its own took it"
		}
		return fmt.Sprintf("%s finds the lock%s held by %s", who, on, other)
	case EvWork:
		return who + " works"
	case EvEnter:
		if e.Peek() {
			return fmt.Sprintf("%s peeks before its Lock said yes: read stock %d%s", who, e.Stock, e.withToken())
		}
		return fmt.Sprintf("%s is inside: read stock %d%s", who, e.Stock, e.withToken())
	case EvWrite:
		return fmt.Sprintf("%s wrote stock %d%s: order confirmed", who, e.Stock, e.withToken())
	case EvExit:
		return who + " leaves the critical section"
	case EvDone:
		switch {
		case e.Err == "" && e.Sold:
			return who + "'s order returned: sold"
		case e.Err == "":
			return who + "'s order returned without selling anything"
		case e.Sold:
			return who + "'s order sold; then " + errWords(e.Err)
		}
		return who + "'s order failed: " + errWords(e.Err)
	case EvRejected:
		return fmt.Sprintf("%s is turned away, %d on the shelf", who, e.Stock)
	case EvFault:
		if e.Sentence == "" { // a history saved before faults said what they do
			return fmt.Sprintf("%s is hit: %s", who, e.Fault)
		}
		return fmt.Sprintf("%s is hit: %s: %s", who, e.Fault, e.Sentence)
	case EvFrozen:
		if e.Sentence == "" {
			return fmt.Sprintf("%s's process is frozen for %s: none of its commands leave", who, e.D)
		}
		return fmt.Sprintf("%s's process is frozen, none of its commands leave, %s (at most %s)", who, e.Sentence, e.D)
	case EvThawed:
		if e.D == 0 {
			return who + " runs again"
		}
		return fmt.Sprintf("%s runs again, frozen %s", who, roundD(e.D))
	case EvPartitioned:
		if e.Sentence == "" {
			return fmt.Sprintf("%s is cut off from the lock server for %s (the inventory still answers)", who, e.D)
		}
		return fmt.Sprintf("%s is cut off from the lock server (the inventory still answers), %s (at most %s)", who, e.Sentence, e.D)
	case EvHealed:
		if e.D == 0 {
			return who + " reaches the lock server again"
		}
		return fmt.Sprintf("%s reaches the lock server again, cut off %s", who, roundD(e.D))
	case EvCrashed:
		return who + " crashed"
	case EvFailover:
		if !e.OK {
			return "the failover" + on + " failed: " + e.Err
		}
		return "the lock primary" + on + " died; the replica, which never saw the last lock write, is primary now" + e.took()
	case EvRestart:
		if !e.OK {
			return "the restart" + on + " failed: " + e.Err
		}
		if e.On != "" {
			return e.On + " restarted without persistence: it forgot every key"
		}
		return "the lock node restarted without persistence: it forgot every key"
	case EvReentry:
		if e.OK {
			return who + "'s nested lock got in"
		}
		return who + "'s nested lock failed: " + errWords(e.Err)
	case EvViolation:
		if e.NotJudgedBy != "" {
			return fmt.Sprintf("also seen (not judged by %s) %s: %s", e.NotJudgedBy, e.Viol, e.Sentence)
		}
		return fmt.Sprintf("VIOLATION %s: %s", e.Viol, e.Sentence)
	case EvRefused:
		return who + "'s Lock said no"
	case EvOverlap:
		return "overlap: " + e.Sentence
	case EvFenced:
		what := "read"
		if e.Write {
			what = "write"
		}
		return fmt.Sprintf("FENCED: the inventory refused %s's stale %s (token %d)", who, what, e.Token)
	}
	return string(e.Kind)
}

// took is " (the failover took 4.3s: …)" where a node change took long enough for a person to
// notice: a Sentinel's election, a container's restart.
func (e Event) took() string {
	if e.D < 100*time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (it took %s: meanwhile the lock's clients had no primary to write to)", e.D.Round(10*time.Millisecond))
}

// due is ", due at 203 ms" for an expiry seen later than the key ran out (at the next command on
// its node), "" when it was seen then or when is not known.
func (e Event) due() string {
	if e.Due <= 0 || e.At-e.Due < time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (due at %s, seen at the next command on the node)", roundD(e.Due))
}

// withToken is " with token 5" for a stock command that showed the inventory a fencing token.
func (e Event) withToken() string {
	if e.Token == 0 {
		return ""
	}
	return fmt.Sprintf(" with token %d", e.Token)
}

// roundD is d as a person reads it: to the millisecond.
func roundD(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

func (o Overlap) String() string {
	d := o.To - o.From
	span := ms(d)
	if d < time.Millisecond {
		span = "less than 1 ms"
	}
	if o.A == o.B {
		return fmt.Sprintf("two orders of buyer %d were both inside the critical section for %s", o.A, span)
	}
	return fmt.Sprintf("buyer %d and buyer %d were both inside the critical section for %s", o.A, o.B, span)
}

func (f Foreign) String() string {
	if f.Rewrote {
		return fmt.Sprintf("buyer %d wrote over the lock that buyer %d held", f.By, f.Owner)
	}
	return fmt.Sprintf("buyer %d deleted the lock that buyer %d held", f.By, f.Owner)
}

func (e ReplyError) String() string {
	whose := "your lock's " + e.Cmd + " (outside Lock and Unlock)"
	switch e.In {
	case history.CallLock:
		whose = "your Lock's " + e.Cmd
	case history.CallUnlock:
		whose = "your Unlock's " + e.Cmd
	}
	s := whose + " failed: " + e.Err
	switch since := Since[e.Cmd]; {
	case e.Lacks && since != "" && e.Server != "":
		s += fmt.Sprintf(" — this server is %s; %s needs %s", e.Server, e.Cmd, since)
	case e.Lacks && e.Server != "":
		s += fmt.Sprintf(" — this server is %s, which does not run %s", e.Server, e.Cmd)
	}
	if e.Times > 1 {
		s += fmt.Sprintf(" (%d times)", e.Times)
	}
	return s
}

func (f Renewal) String() string {
	s := fmt.Sprintf("buyer %d extended the lease of the lock that buyer %d held (%s)", f.By, f.Owner, f.Cmd)
	switch {
	case f.Dead:
		s += ", whose process had died: a lock kept alive for nobody"
	case f.Done:
		s += ", whose orders had all ended: a lock kept alive for nobody"
	}
	return s
}

func (j Rejection) String() string {
	return fmt.Sprintf("buyer %d was turned away while %s on the shelf", j.Buyer, units(j.Stock))
}

func (e Reentry) String() string {
	return fmt.Sprintf("buyer %d could not re-enter the lock it held: %s", e.Buyer, e.Why)
}

// units says "1 unit was" / "3 units were".
func units(n int) string {
	if n == 1 {
		return "1 unit was"
	}
	return fmt.Sprintf("%d units were", n)
}

// oversoldSoFar is oversoldSentence said as a run goes: a count at a moment, which later writes
// change.
func oversoldSoFar(at time.Duration, confirmed, left int) string {
	verb := "units had left"
	if left == 1 {
		verb = "unit had left"
	}
	return fmt.Sprintf("%s confirmed but only %d %s the shelf by %s: %d oversold so far", vocab.Count(confirmed, "order", "orders"), left, verb, ms(at), confirmed-left)
}

func oversoldSentence(confirmed, left int) string {
	verb := "units left"
	if left == 1 {
		verb = "unit left"
	}
	return fmt.Sprintf("%s confirmed but only %d %s the shelf: %d oversold", vocab.Count(confirmed, "order", "orders"), left, verb, confirmed-left)
}

func (s Starve) String() string {
	return fmt.Sprintf("buyer %d waited inside Lock while buyers that asked after it got the lock %d times", s.Buyer, s.Passed)
}

func idleSentence(share float64, idle, of int) string {
	return fmt.Sprintf("the lock sat free for %.0f%% of the time while buyers waited for it (after %d of %d releases, longer than a woken buyer needs): they were asleep when it was released", 100*share, idle, of)
}

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
	fmt.Fprintf(&b, "step %s, scenario %s (%s backend, %s)\n", rep.Step, rep.Scenario, rep.Backend, vocab.Count(rep.Buyers, "buyer", "buyers"))
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
	for i, f := range rep.ForeignRenewals {
		if i == most {
			fmt.Fprintf(&b, "  … and %d more foreign renewals\n", len(rep.ForeignRenewals)-most)
			break
		}
		fmt.Fprintf(&b, "  foreign renewal: %s at %s\n", f, ms(f.At))
	}
	if n := len(rep.LostSales); n > 0 {
		fmt.Fprintf(&b, "  lost sales: %s turned away while units remained\n", vocab.Count(n, "order", "orders"))
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
	if also := rep.AlsoSeen(); len(also) > 0 {
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

// AlsoSeen is the kinds the referee found that the scenario does not judge: no violation of
// the run, said as "also seen" wherever the verdict is.
func (rep *Report) AlsoSeen() []vocab.Kind {
	var also []vocab.Kind
	for _, k := range rep.Found {
		if !slices.Contains(rep.Judged, k) {
			also = append(also, k)
		}
	}
	return also
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
	return fmt.Sprintf("%d Redis commands for %s: %.0f per order (limit %d)",
		commands, vocab.Count(confirmed, "confirmed order", "confirmed orders"), float64(commands)/float64(confirmed), vocab.FloodLimit)
}

// noHoldSays is why idle has no verdict when n Lock calls said yes and none was seen to take a
// lock: no key of the run was written by them, so when the lock sat free is unknown.
func noHoldSays(n int) string {
	return fmt.Sprintf("%s said yes and none wrote a key of the run: the referee saw no lock taken, so it cannot tell when the lock sat free", vocab.Count(n, "Lock call", "Lock calls"))
}

// unseenSays is what the referee could not see: keys of node changed between two commands.
func unseenSays(node string) string {
	return fmt.Sprintf("keys of %s changed between two commands, by something no process sent (a client outside the buyers' processes?)", node)
}

// ambiguousSays is what the referee could not tell: whether buyer's command, or the key's
// lease, removed a key of node.
func ambiguousSays(buyer int, cmd, node string) string {
	return fmt.Sprintf("buyer %d's %s ran as a key of %s ran out; the referee could not tell which of them removed it", buyer, cmd, node)
}

// lostSalesSentence is lost-sales: n orders turned away, the first of them first.
func lostSalesSentence(n int, first Rejection) string {
	return fmt.Sprintf("%s turned away while units remained; first: %s", vocab.Count(n, "order was", "orders were"), first)
}

// disagreeSays is where porcupine and the referee part: oversold units one sale after another
// explains all the same.
func disagreeSays(oversold int) string {
	return fmt.Sprintf("the referee counts %d oversold, yet one sale after another explains every order's read and write: an order confirmed without taking its unit off the shelf, or the shelf changed outside the orders", oversold)
}

// stuckSentence is what the end-of-run probe found: kept out for d by owner's lock (0: a lock
// nobody uses any more) while shelf units remained.
func stuckSentence(d time.Duration, owner, shelf int) string {
	who := "a lock nobody is using any more"
	if owner != 0 {
		who = fmt.Sprintf("the lock of buyer %d, whose order has ended,", owner)
	}
	return fmt.Sprintf("a new buyer could not get in for %s: %s keeps out everyone while %s on the shelf", ms(d), who, units(shelf))
}

// liveStuckSentence is a live session's stuck: owner's lock that never expires, its process dead
// or its order ended, a later buyer turned away or not.
func liveStuckSentence(owner int, dead, turned bool, shelf int) string {
	how := "whose order has ended"
	if dead {
		how = "whose process has died"
	}
	s := fmt.Sprintf("the lock is still held by buyer %d, %s, and it never expires, while %s on the shelf: nobody can buy them", owner, how, units(shelf))
	if turned {
		s += " (a buyer who came after was turned away)"
	}
	return s
}

// orphanStuckSentence is a live session's stuck for a lock buyer's Lock wrote without returning
// holding it (a lost reply).
func orphanStuckSentence(buyer, shelf int) string {
	return fmt.Sprintf("a lock buyer %d's Lock wrote, though it did not return holding it, never expires, while %s on the shelf: nobody can buy them (a buyer who came after was turned away)", buyer, units(shelf))
}
