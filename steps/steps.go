// Package steps is the vocabulary every lockstep step shares: the Locker each step implements, the
// Shop its order handler sells from, the Proc a step is built for, the scenarios that attack a step
// and the violation kinds a referee judges. It holds no Redis code of its own: a step brings that.
package steps

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/redis/go-redis/v9"
)

// Locker is one process's handle on named Redis locks: the articles' tryLock / releaseLock.
//
// Lock reports whether the caller now holds key. A non-blocking step answers false at once when
// another process holds it; a blocking step waits inside Lock until it holds the key or ctx ends.
// Unlock gives the key back. Hazard: what "holds" means is exactly what each step gets wrong in its
// own way — a key that expired, or that another process took over, may still look held to the
// caller.
type Locker interface {
	Lock(ctx context.Context, key string) (bool, error)
	Unlock(ctx context.Context, key string) error
}

// Shop is what an order handler's critical section touches: one product's stock in the inventory
// store. The stock is read, the business work is done, and the stock is written back
// (GET, work, SET n-1) exactly as the articles do it, so a lock that lets two buyers in oversells.
type Shop interface {
	// LockKey is the name of the product's lock (the articles use the product id).
	LockKey() string
	// Stock reads the units on the shelf (GET).
	Stock(ctx context.Context) (int, error)
	// Work is the business work between reading and writing the stock. Hazard: it can fail,
	// take longer than the lock's TTL, freeze the process or kill it; the lab's faults live here.
	Work(ctx context.Context) error
	// SetStock writes the stock back (SET). A nil error confirms the order: the unit is sold.
	// Hazard: once called, the write is on its way: a context cancelled after the call does not
	// stop it, as a request already on the wire is not recalled.
	SetStock(ctx context.Context, n int) error
	// StockFenced reads the stock as Stock does, presenting a fencing token: the inventory keeps
	// the highest token it has seen and refuses (ErrFenced) one lower than that.
	StockFenced(ctx context.Context, token int64) (int, error)
	// SetStockFenced writes the stock as SetStock does, only if token is not lower than the
	// highest the inventory has seen; the check and the write are one atomic step (ErrFenced
	// when refused: the order confirms nothing).
	SetStockFenced(ctx context.Context, n int, token int64) error
	// Sell takes one unit off the shelf in one atomic step, only if one is left (ErrSoldOut
	// otherwise): no read-modify-write, so no critical section to protect.
	Sell(ctx context.Context) error
}

// Proc is what a step's constructor is given: one simulated process. A Locker belongs to exactly
// one Proc, so a Locker's own fields play the part of Java's ThreadLocal in the articles.
type Proc struct {
	// ID names the process ("buyer-3"); the articles store the thread id as the lock's value.
	ID string
	// Redis is this process's own client to the lock server. Hazard: after a failover it talks
	// to the promoted replica, which may never have seen this process's lock.
	Redis *redis.Client
	// Nodes are this process's clients to every lock node, Nodes[0] being Redis: a quorum lock
	// (Redlock) locks on several independent nodes; a single-node topology has one.
	Nodes []*redis.Client
	// TTL is the lease a step gives its lock, where it gives one.
	TTL time.Duration
	// Go starts a goroutine that belongs to the process (a watchdog). Its context ends when the
	// process dies; a goroutine that ignores it outlives a crash, which a real process cannot.
	Go func(func(ctx context.Context))
	// Ctx is the process's lifetime: it ends when the process dies. A timer of the process (a
	// lease's renewal) should stop with it, as a dead process's would.
	Ctx context.Context
	// Now is the process's wall clock. Hazard: it can be wrong (the clock-skew scenario runs one
	// process's ahead); a lock that compares times of different clients trusts every clock.
	// Elapsed time belongs on the monotonic clock (time.Since), which no skew touches.
	Now func() time.Time
}

// Errors a step's handler or Locker returns, said as a learner reads them in a report: no
// package name in front (the referee says an error as it is).
var (
	// ErrBusy: the lock is held by another process and this step does not wait.
	ErrBusy = errors.New("the lock is busy, order refused")
	// ErrSoldOut: the critical section found no stock left.
	ErrSoldOut = errors.New("sold out")
	// ErrNotOwner: Unlock found the lock missing or held by another process, and left it alone.
	ErrNotOwner = errors.New("the lock is not held by this process")
	// ErrFenced: the inventory refused a fenced read or write whose token was lower than one
	// it had already seen: a newer lock holder exists.
	ErrFenced = errors.New("the inventory refused a stale fencing token")
)

// Need is a Redis command a step sends that older servers do not run. Hazard: it names a command,
// not an option of one: a server that runs SET may still refuse SET … IFEQ, and a server is asked
// only whether it knows the command's name.
type Need struct {
	Command string // "DELEX", as COMMAND INFO spells it
	Since   string // the first releases that run it, as a reason says: "Redis 8.4 or Valkey 9.2"
}

// Step describes one iteration of the lock as data: the lab's picker, the matrix and the tests all
// read the same descriptor.
type Step struct {
	Slug    string // "04_atomic_ttl": the folder name, used in reports and -step flags
	Number  int    // 4; 0 for a side road
	Base    string // the slug of the step this one grows from (its code pane diffs against it); "" for the first
	Side    bool   // a side road beside the numbered line, not a step of it (the GETSET lock)
	NoLock  bool   // the step takes no lock at all: faults aimed at a lock holder have nothing to act on
	Nodes   int    // the lock nodes it needs: 3 for a quorum lock; 0 means 1
	Title   string // "SET NX PX: lock and TTL in one command"
	Claim   string // the one-line promise this step makes
	Article string // the article section it ports
	Fixes   string // what this step changes
	Breaks  string // what still breaks
	Hint    string // how a learner can break it
	Lesson  string // shown after it breaks
	// BreakWith is the canned scenario that breaks this step, or "" if none on one Redis does.
	BreakWith Scenario
	// Shows names what on the timeline shows the step's idea on its break (BreakWith), as the
	// lab draws it: a mark or a lane of lab/picture's table, by its name there (picture.Ideas:
	// "expired", "DELEX", "spins", "line", …). The lab's tests hold that the step's b screen and
	// its page draw it.
	Shows string
	// Needs names the commands the step sends that not every Redis runs (DELEX). A run on a lock
	// node whose server lacks one is not played: it says why (arena.ErrCannotStage), never passes.
	Needs []Need
	// NeedsReplica: the step's Lock waits for a replica to acknowledge its write (WAIT) and
	// refuses without one, so a lock node with no replica refuses every order. Such a run is not
	// played (arena.ErrCannotStage, with the reason), never judged as a lock that sells nothing.
	NeedsReplica bool

	// New builds the step's Locker for one process.
	New func(p Proc) Locker
	// Order is the step's order handler, written as that iteration writes it.
	Order func(ctx context.Context, l Locker, s Shop) error
	// PerProcess, where set, is the New and Order of process n's own copy of the step's package
	// (n 0: the end-of-run probe), used in place of New and Order: each process of a deployment
	// loads its package for itself, and its package-level state is its own, where the lab plays
	// every buyer in one Go process that loads a package once. lab grade builds a learner's
	// package once per process where it has package-level state (grading.SharedState). Hazard:
	// two requests of one process share its copy, as two requests of one server share its state.
	PerProcess func(n int) (New func(Proc) Locker, Order func(context.Context, Locker, Shop) error)
	// Source holds the step's own files (lock.go, order.go, any .lua), for the lab's code pane.
	Source fs.FS

	// Expect is the violations each scenario must find: the step's row of the matrix in README.md.
	// A scenario missing from the map expects none.
	Expect map[Scenario][]Kind
}
