// Package picture is what the lab draws an event as, on the terminal and on the page alike: one
// table of marks, and which mark a command is. The terminal (lab's timeline) and the page (lab's
// HTML timelines) both read it, so a glyph means one thing wherever a learner meets it.
package picture

import (
	"strings"

	"github.com/lockstep-lab/lockstep/internal/referee"
)

// ID names one kind of mark; None is no mark. A terminal lane keeps a bucket's marks as IDs.
type ID uint8

// The marks, in the table's order.
const (
	None ID = iota

	// a buyer's commands
	StockGet     // the stock's GET
	StockSet     // the stock's SET (drawn where the write lands)
	LockGet      // a GET of the lock's key: whose lock is it?
	Try          // a try for the lock: SET NX, or a waiter's script or write in Lock
	LockScript   // a script in Lock that is not a waiter's try: a re-entry, a rewrite
	UnlockScript // a script in Unlock
	Del          // a DEL of the lock's key
	DelEx        // a DELEX of the lock's key: compare-and-delete in one command
	WaitAck      // a WAIT (or WAITAOF): the lock write waits for a replica's acknowledgement
	Renew        // a renewal: PEXPIRE, or a script outside Lock and Unlock (a watchdog)
	Publish      // a wake-up published to the waiters
	Woken        // a waiter's first try after a wake-up was published
	Queued       // the buyer joined a line of waiters (a fair lock's queue)
	Fenced       // a stock write the inventory refused for its stale fencing token
	Other        // any other command (page only: the terminal leaves it out)

	// the lock's lane
	Expired  // the lock ran out (its TTL)
	Lost     // the lock was lost in a failover or a restart
	Foreign  // another buyer's write deleted the holder's lock
	Failover // the lock server failed over
	Restart  // the lock server restarted

	// a buyer's lane, beside its commands
	Refused // Lock said no
	Skewed  // the buyer's wall clock runs ahead of the others' (the clock-skew scenario)

	// the page only: the terminal draws these as a lane's state or says them in its log
	Read          // the inventory: a stock read (drawn as the stock it saw)
	Wrote         // the inventory: a stock write (drawn as the stock it left)
	Acquired      // a node took the buyer's lock
	Released      // the holder released it
	Left          // what a quorum's ended hold left on a node went
	Sold          // the order sold
	NoSale        // the order returned, nothing sold
	Failed        // the order returned an error
	Rejected      // the shop turned the order away
	Waiting       // the order waits for another's lock
	Fault         // a fault struck
	Crashed       // the buyer's process crashed
	Reentry       // a re-entry the lock allowed
	ReentryFailed // a re-entry the lock refused
	Violation     // the referee found a violation (on the page's ruler)
	Seen          // the referee saw a kind the scenario does not judge (on the page's ruler): no violation
)

// Mark is how one kind of mark is drawn: its glyph, its class on the page, its rank (a crowded
// terminal column keeps the marks that tell most), and whether the terminal draws it on its
// lane (Term; the page draws every mark).
type Mark struct {
	Glyph rune
	Class string
	Rank  int
	Term  bool
}

// Marks is the table, by ID.
var Marks = [...]Mark{
	None:          {' ', "", 0, false},
	StockGet:      {'G', "scmd", 3, true},
	StockSet:      {'S', "scmd", 4, true},
	LockGet:       {'o', "cmd", 2, true},
	Try:           {'N', "cmd", 0, false}, // the terminal draws a waiter's tries as its lane's ~
	LockScript:    {'L', "cmd", 5, true},
	UnlockScript:  {'U', "cmd", 6, true},
	Del:           {'D', "cmd", 6, true},
	DelEx:         {'E', "cmd", 6, true},
	WaitAck:       {'A', "cmd", 5, true},
	Renew:         {'P', "cmd", 1, true},
	Publish:       {'W', "cmd", 7, true},
	Woken:         {'^', "woken", 5, true},
	Queued:        {'Q', "queued", 5, true},
	Fenced:        {'⊘', "fenced", 7, true},
	Other:         {'*', "cmd", 0, false},
	Expired:       {'x', "expired", 7, true},
	Lost:          {'?', "lost", 8, true},
	Foreign:       {'!', "foreign", 9, true},
	Failover:      {'F', "node", 10, true},
	Restart:       {'R', "node", 10, true},
	Refused:       {'n', "refused", 0, true},
	Skewed:        {'»', "skewed", 8, true},
	Read:          {'#', "read", 0, false},
	Wrote:         {'#', "write", 0, false},
	Acquired:      {'+', "acquired", 0, false},
	Released:      {'✓', "released", 0, false},
	Left:          {'!', "left", 0, false},
	Sold:          {'✓', "done", 0, false},
	NoSale:        {'–', "done", 0, false},
	Failed:        {'✗', "failed", 0, false},
	Rejected:      {'✗', "rejected", 0, false},
	Waiting:       {'w', "waiting", 0, false},
	Fault:         {'⚡', "fault", 0, false},
	Crashed:       {'✖', "crash", 0, false},
	Reentry:       {'r', "reentry", 0, false},
	ReentryFailed: {'r', "failed", 0, false},
	Violation:     {'!', "viol", 0, false},
	Seen:          {'○', "seen", 0, false},
}

// Glyph is m's glyph as a string.
func (m ID) Glyph() string { return string(Marks[m].Glyph) }

// Legend names the commands' marks and the lock lane's, grouped as both legends say them. The
// terminal draws a run of tries as its lane's ~ (spins), and no mark for another command: its
// legend leaves out the groups marked Page. A Rare group is named only where its mark was drawn
// (a wake-up, a line of waiters, a skewed clock: a few steps draw them).
var Legend = []struct {
	Marks []ID
	Says  string
	Page  bool // the page's legend only
	Lock  bool // drawn on the lock's lane (the page's lock nodes)
	Rare  bool // the terminal's legend names it only once it was drawn
}{
	{Marks: []ID{StockGet, StockSet}, Says: "GET/SET stock"},
	{Marks: []ID{LockGet}, Says: "GET owner"},
	{Marks: []ID{Try}, Says: "a try for the lock (SET NX, or a waiter's script)", Page: true},
	{Marks: []ID{Refused}, Says: "Lock said no", Rare: true},
	{Marks: []ID{Del}, Says: "DEL"},
	{Marks: []ID{DelEx}, Says: "DELEX (compare-and-delete)", Rare: true},
	{Marks: []ID{WaitAck}, Says: "WAIT for a replica", Rare: true},
	{Marks: []ID{LockScript, UnlockScript}, Says: "Lua in Lock/Unlock"},
	{Marks: []ID{Publish}, Says: "wake-up published", Rare: true},
	{Marks: []ID{Woken}, Says: "woken: tries again", Rare: true},
	{Marks: []ID{Queued}, Says: "joins the line of waiters", Rare: true},
	{Marks: []ID{Renew}, Says: "renew"},
	{Marks: []ID{Skewed}, Says: "its clock runs ahead", Rare: true},
	{Marks: []ID{Other}, Says: "another command", Page: true},
	{Marks: []ID{Expired}, Says: "expired", Lock: true},
	{Marks: []ID{Foreign}, Says: "foreign DEL", Lock: true},
	{Marks: []ID{Fenced}, Says: "stale write refused", Rare: true},
	{Marks: []ID{Failover, Restart, Lost}, Says: "failover/restart/lost", Lock: true},
}

// Glyphs is a legend group's glyphs, joined by /: "G/S".
func Glyphs(ids []ID) string {
	var g []string
	for _, m := range ids {
		g = append(g, m.Glyph())
	}
	return strings.Join(g, "/")
}

// OfCommand is the mark of a buyer's command c. waiter: the buyer waits for another's lock (it
// started an order, has not got in and does not hold the lock), so what it writes in Lock is one
// more try. Hazard: a script's name says nothing of what it does; c.In (the call it was sent in)
// tells a lock script from an unlock script and a watchdog's renewal.
func OfCommand(c *referee.Command, waiter bool) ID {
	switch {
	case c == nil:
		return None
	case c.Stock && c.Name == "GET":
		return StockGet
	case c.Stock:
		return StockSet
	case c.NX:
		return Try
	case c.Name == "GET" && c.OnLock:
		return LockGet
	case c.Name == "DEL" && c.OnLock:
		return Del
	case c.Name == "DELEX" && c.OnLock:
		return DelEx
	case c.Name == "WAIT" || c.Name == "WAITAOF":
		return WaitAck
	case c.In == "lock" && waiter:
		return Try
	case c.In == "unlock" && c.Script:
		return UnlockScript
	case c.In == "" && c.Script, c.Name == "PEXPIRE", c.Name == "EXPIRE":
		return Renew
	case c.Script:
		return LockScript
	}
	return Other
}

// OnTerminal tells whether the terminal draws mark m on its lane (Mark.Term): the commands'
// marks and the lock lane's, but a try (a waiter's is drawn as its lane's ~), another command, and
// the page's own marks.
func (m ID) OnTerminal() bool { return Marks[m].Term }
