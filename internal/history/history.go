// Package history is a run as data: the records the arena observed, in the order it observed them,
// and the header that says what was played. The referee is a function of a History; a saved one is
// judged again to the same verdict.
package history

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/lockstep-lab/lockstep/internal/vocab"
)

// History is one run as data: everything the arena observed, in the order it observed it. The
// referee is a function of it (Judge), so a saved history is judged again to the same verdict.
type History struct {
	// Format is the format it was written in (Version when this code wrote it); 0 for a history
	// written before histories said theirs. Reading one upgrades it (format.go).
	Format   int            `json:"format,omitempty"`
	Step     string         `json:"step"`
	Scenario vocab.Scenario `json:"scenario"` // "" for a live session: every kind is judged
	// What says in one sentence what the scenario does; Judged is the kinds it judges (every kind
	// when Scenario is ""). The referee reads them here, and nowhere else.
	What   string       `json:"what,omitempty"`
	Judged []vocab.Kind `json:"judged,omitempty"`
	// Play is the play's number, from 1, where a scenario plays several (unlock-race: each gap
	// of the holder's Unlock in a play of its own); 0 where it plays once.
	Play    int      `json:"play,omitempty"`
	Backend string   `json:"backend"`
	Timing  Timing   `json:"timing"`
	Nodes   []string `json:"nodes"`    // the lock nodes' names, by index
	LockKey string   `json:"lock_key"` // the shop's lock key, without the run's prefix
	Stock   int      `json:"stock"`    // the shelf at the start
	// NoLock: the step takes no lock at all (step 1): an order's read of the stock is an entry
	// with no Lock to say yes first. The referee tells a peek (a read before the order's Lock said
	// yes) by it. Hazard: without it, a read by an order of a lock-free step and a peek look
	// alike; it is written even when false, so a history saved before it was kept is known by its
	// absence (upgrade).
	NoLock  bool     `json:"no_lock"`
	Records []Record `json:"records"`
}

// RecordKind says what a Record is.
type RecordKind string

// The kinds of record.
const (
	RecOrder   RecordKind = "order"   // an order began (What "begin"), began its work ("work"), or its handler returned ("end")
	RecCall    RecordKind = "call"    // a Lock or Unlock call began or returned (What "lock", "unlock"; End)
	RecCmd     RecordKind = "cmd"     // a command, pipeline or transaction answered by a lock node
	RecLapse   RecordKind = "lapse"   // keys of a lock node expired (noticed at its next observation)
	RecUnseen  RecordKind = "unseen"  // keys of a lock node changed by something no process sent
	RecStock   RecordKind = "stock"   // a stock command at the inventory (What: StockRead, StockWrite…)
	RecFault   RecordKind = "fault"   // a fault struck a process (What: the fault)
	RecProcess RecordKind = "process" // a process crashed, froze, thawed, was cut off or healed
	RecNode    RecordKind = "node"    // a lock node failed over or restarted (Keys: what it lost)
	RecNested  RecordKind = "nested"  // the reentrant fault's nested Lock: OK, or Err says why not
	RecProbe   RecordKind = "probe"   // a probe's finding (What "idle": D after the release at Due; "stuck")
	RecClock   RecordKind = "clock"   // time passed (a live session's tick): the live stuck check
	RecFinal   RecordKind = "final"   // the shelf read back at the end (Stock)
	RecBlind   RecordKind = "blind"   // something the referee could not observe (What; Kinds unjudged)
	RecNowhere RecordKind = "nowhere" // the scenario's fault found nowhere to strike (What says why)
	RecNote    RecordKind = "note"    // what of the scenario did not happen as staged, and is no gap
	RecTimeout RecordKind = "timeout" // the run passed its deadline (What says how)
)

// The What of a stock record.
const (
	StockRead          = "read"          // GET: Stock is what it read
	StockWrite         = "write"         // SET: Stock is what it wrote; the order is confirmed
	StockReadRefused   = "read-refused"  // a fenced read the inventory refused (Token too low)
	StockWriteRefused  = "write-refused" // a fenced write the inventory refused: nothing changed
	StockSell          = "sell"          // an atomic sale: Stock is what it left (it read Stock+1)
	StockSoldOut       = "sold-out"      // an atomic sale that found nothing to sell
	OrderBegin         = "begin"         // RecOrder
	OrderEnd           = "end"           // RecOrder
	OrderWork          = "work"          // RecOrder: the order began its business work
	CallLock           = "lock"          // RecCall
	CallUnlock         = "unlock"        // RecCall
	ProbeIdle          = "idle"          // RecProbe
	ProbeStuck         = "stuck"         // RecProbe
	ExcuseFault        = "fault"         // an order's work failed by the arena's own fault
	ExcuseDead         = "dead"          // an order's process died
	ExcuseCut          = "cut"           // the run (or the session) ended an order's context
	NodeFailover       = "failover"      // RecNode
	NodeRestart        = "restart"       // RecNode
	ProcessCrashed     = "crashed"       // RecProcess
	ProcessFrozen      = "frozen"        // RecProcess
	ProcessThawed      = "thawed"        // RecProcess
	ProcessPartitioned = "partitioned"   // RecProcess
	ProcessHealed      = "healed"        // RecProcess
)

// Record is one observation. Which fields it uses depends on its Kind (see RecordKind); the
// others are zero. Buyers count from 1 (0: the arena or the end-of-run probe); Order and Call are
// arena-wide ids from 1; Node is a lock node's index. Hazard: the arena appends records in one
// total order; a record's At is when it was observed, which for a lock node's expiry is later
// than when the key ran out (Due).
type Record struct {
	At     time.Duration `json:"at"`
	Kind   RecordKind    `json:"kind"`
	What   string        `json:"what,omitempty"`
	Buyer  int           `json:"buyer,omitempty"`
	Order  int           `json:"order,omitempty"`
	K      int           `json:"k,omitempty"`    // the buyer's k-th order (order records)
	Call   int           `json:"call,omitempty"` // the call a command was sent in, if it is known
	Node   int           `json:"node,omitempty"`
	End    bool          `json:"end,omitempty"`    // a call's return
	OK     bool          `json:"ok,omitempty"`     // a Lock call's answer; a probe got in; a node's change worked
	Err    string        `json:"err,omitempty"`    // what a call, an order or a node's change returned
	Excuse string        `json:"excuse,omitempty"` // why an order that sold nothing turned nobody away
	Cmds   []Cmd         `json:"cmds,omitempty"`
	Atomic bool          `json:"atomic,omitempty"` // the commands ran as one (a MULTI/EXEC)
	Keys   []KeyChange   `json:"keys,omitempty"`
	// Ambiguous: the watcher could not rule out that a key that vanished expired on its own;
	// DeletesOnly: every command that could delete answers how many it deleted (DEL, UNLINK,
	// GETDEL), and ReplyZero: they all answered 0 or nil.
	Ambiguous   bool          `json:"ambiguous,omitempty"`
	DeletesOnly bool          `json:"deletes_only,omitempty"`
	ReplyZero   bool          `json:"reply_zero,omitempty"`
	Seq         int64         `json:"seq,omitempty"`   // the command's place in its server's own order
	Stock       int           `json:"stock,omitempty"` // stock records, the final shelf
	Token       int64         `json:"token,omitempty"`
	D           time.Duration `json:"d,omitempty"`   // a freeze's or cut's most (its end: how long it lasted), a probe's delay or limit
	Due         time.Duration `json:"due,omitempty"` // when keys ran out (lapse), or the release a probe measured
	Kinds       []vocab.Kind  `json:"kinds,omitempty"`
	// Says is what a fault does, in the words of the move that struck (fault records).
	Says string `json:"says,omitempty"`
	// Published is what a command published on the run's own channels (exact watchers only).
	Published []Message `json:"published,omitempty"`
	// Server names the lock node's server ("Redis 7.0.15", "miniredis v2.40.0") on the record of
	// a command it answered with an error, and Lacks the commands of it the server does not run,
	// as it says itself (COMMAND INFO): what the error replies are said with.
	Server string   `json:"server,omitempty"`
	Lacks  []string `json:"lacks,omitempty"`
}

// Message is one message published on a channel of the run (Channel without its prefix).
type Message struct {
	Channel string `json:"channel"`
	Text    string `json:"text,omitempty"`
}

// Cmd is one command as sent: its name and arguments, key names without the run's prefix, and
// the error the server replied with, if it did (Err: "ERR unknown command 'hexpire'…",
// "EXECABORT …", "WRONGTYPE …", "NOSCRIPT …", a script's error), never a network's.
type Cmd struct {
	Name string   `json:"name"`
	Args []string `json:"args,omitempty"`
	Err  string   `json:"err,omitempty"`
}

// KeyChange is what one command (or expiry) did to one key of a lock node: its value print before
// and after ("" when the key did not exist) and its lease after (TTL; -1 without expiry).
type KeyChange struct {
	Key    string        `json:"key"`
	Before string        `json:"before,omitempty"`
	After  string        `json:"after,omitempty"`
	TTL    time.Duration `json:"ttl,omitempty"`
}

// Gone reports whether the key does not exist after the change.
func (k KeyChange) Gone() bool { return k.After == "" }

// WriteHistory writes h as JSON.
func WriteHistory(w io.Writer, h *History) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(h)
}

// ReadHistory reads a history WriteHistory wrote.
func ReadHistory(r io.Reader) (*History, error) {
	var h History
	if err := json.NewDecoder(r).Decode(&h); err != nil {
		return nil, fmt.Errorf("history: not a history: %w", err)
	}
	if h.Step == "" && len(h.Records) == 0 {
		return nil, fmt.Errorf("history: not a history: no step and no records")
	}
	return &h, nil
}

// Kinds is what h is judged for: its Judged kinds, or every kind for a live session's.
func (h *History) Kinds() []vocab.Kind {
	if h.Scenario == "" {
		return vocab.Kinds
	}
	return h.Judged
}
