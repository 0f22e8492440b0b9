package arena

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/durable"
	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/lockstep-lab/lockstep/internal/redisenv"
	"github.com/lockstep-lab/lockstep/steps"
	"github.com/redis/go-redis/v9"
)

// nodeEye is the arena's view of one lock node. Every process command to the node passes
// observe, one at a time, so the watcher can tell what each one did to every key of the run.
type nodeEye struct {
	i    int
	node redisenv.Node
	w    redisenv.Watcher
	// turn lets one observed command (or failover, or restart) at a time reach the node. It is
	// held across the command's round trip: a durable.Mutex, so a bubble's clock runs on while
	// other commands wait for it.
	turn *durable.Mutex
	seq  int64 // commands observed on the node: each one's place in the node's own order

	// server names the node's server once a command got an error reply there, and lacks says,
	// by command name, whether it runs it (what it said of each such command; guarded by turn).
	server string
	lacks  map[string]bool

	held       bool // its replication is held back, for a failover to come (guarded by a.mu)
	holdArmed  bool // hold it back before the next lock write of holdFor (0: anyone) on a free lock
	holdFor    int
	heldBy     int  // the process whose lock write the hold caught (guarded by a.mu)
	failedOver bool // guarded by a.mu
}

// observe sends cmds (one command, a pipeline or a transaction) of p to node with the watcher
// looking, and records what they did; changed reports whether they changed a key of the run, seq
// is their place in the node's order (0: not recorded).
func (a *Arena) observe(ctx context.Context, p *process, node int, cmds []redis.Cmder, c *call, send func() error) (changed bool, seq int64, err error) {
	e := a.nodes[node]
	for _, cmd := range cmds {
		if blocking(cmd) {
			// It may wait for a long time: it cannot have the node to itself.
			a.recordNow(history.Record{Kind: history.RecBlind, Kinds: []steps.Kind{steps.ForeignRelease},
				What: fmt.Sprintf("buyer %d sent a blocking command (%s); the referee cannot watch what such a command does", p.n, cmd.Name())})
			return false, 0, send()
		}
	}
	if changeNothing(payload(cmds)) {
		// WAIT, WAITAOF: they change no key and may wait for their timeout, so they go out
		// without the node's turn; then, turn in hand, they take their place in its order as
		// commands that changed nothing.
		err = send()
		e.turn.Lock()
		defer e.turn.Unlock()
		return a.recordCmds(p, e, c, cmds, redisenv.Change{}, nil, err)
	}
	e.turn.Lock()
	defer e.turn.Unlock()
	// The greedy scenario's gate of this node is checked with the node's turn in hand, so no
	// command that passed it earlier can slip in between the greedy buyer's release and its retry.
	for {
		g, shut := a.prio.shutFor(p, node)
		if !shut {
			break
		}
		e.turn.Unlock()
		err := a.prio.await(ctx, p, g)
		e.turn.Lock()
		if err != nil {
			return false, 0, fail(cmds, err)
		}
	}
	a.prio.before(p, c, cmds, node)
	defer a.prio.after(p, c, node)
	a.holdBeforeLockWrite(e, p, c, cmds)
	observe := e.w.Observe
	if changesUnnamed(cmds) {
		observe = e.w.ObserveAll
	}
	ch, werr := observe(context.WithoutCancel(ctx), func() { err = send() })
	return a.recordCmds(p, e, c, cmds, ch, werr, err)
}

// recordCmds records what cmds of p, in call c, did at e's node (ch, as the watcher saw it, or werr
// why it could not), and their answer err; what observe returns. The caller holds e's turn.
func (a *Arena) recordCmds(p *process, e *nodeEye, c *call, cmds []redis.Cmder, ch redisenv.Change, werr, err error) (changed bool, seq int64, _ error) {
	node := e.i
	hc := a.cmds(cmds)
	server, lacks := a.replyErrors(context.Background(), e, cmds, err, hc)
	var refused *redisenv.Refusal
	if errors.As(err, &refused) {
		// The URL backend's guard kept it from the user's server: nothing was sent, and the
		// run has no verdict, for what the lock would have done is not what it did.
		a.recordNow(history.Record{Kind: history.RecBlind, Kinds: steps.Kinds,
			What: fmt.Sprintf("%s lock sent a command the lab did not let reach a server it does not own: %s", p.whose(), refused.Error())})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if refused == nil {
		a.outsideKeys(p, c, cmds)
	}
	if werr != nil {
		if _, never := e.w.(blindWatcher); !never {
			a.record(history.Record{Kind: history.RecBlind, Kinds: []steps.Kind{steps.ForeignRelease, steps.ForeignRenewal},
				What: fmt.Sprintf("the referee could not see what a command did to %s: %v", e.node.Name(), werr)})
		}
		return false, 0, err
	}
	if len(ch.Lapsed) > 0 {
		due := a.Since()
		for _, k := range ch.Lapsed {
			if !k.Ran.IsZero() {
				due = min(due, a.at(k.Ran))
			}
		}
		a.record(history.Record{Kind: history.RecLapse, Node: node, Keys: keyChanges(ch.Lapsed), Due: due})
	}
	if len(ch.Unseen) > 0 {
		a.record(history.Record{Kind: history.RecUnseen, Node: node, Keys: keyChanges(ch.Unseen)})
	}
	e.seq++
	rec := history.Record{Kind: history.RecCmd, Buyer: p.n, Node: node, Cmds: hc, Keys: keyChanges(ch.Keys), Seq: e.seq,
		Atomic: len(cmds) > 1 && cmds[0].Name() == "multi", Server: server, Lacks: lacks}
	if c != nil {
		rec.Call = c.id
	}
	if ch.Ambiguous {
		rec.Ambiguous, rec.DeletesOnly, rec.ReplyZero = true, plainDeletes(cmds), replyZero(cmds)
	}
	for _, m := range ch.Published {
		rec.Published = append(rec.Published, history.Message{Channel: m.Channel, Text: m.Text})
	}
	a.record(rec)
	return len(ch.Keys) > 0, e.seq, err
}

// outsideKeys records, the first time a process's command may write a key built from the run's
// (the run's prefix inside it, not at its start: `lock:` + the key Lock was given), that the lock
// lives outside the run's keys: no watcher looks there, so the referee cannot see the lock taken,
// released or lost, and every fault that strikes at what the lock wrote finds nowhere to strike
// (Arena.nowhere says why). The caller holds a.mu. Hazard: a key that shares nothing with the
// run's (a fixed "mylock") is not found here; such a lock is seen to write nothing, and the faults
// say so in their own words.
func (a *Arena) outsideKeys(p *process, c *call, cmds []redis.Cmder) {
	if a.outside != "" || !mayWriteAny(payload(cmds)) {
		return
	}
	for _, cmd := range payload(cmds) {
		if !mayWriteAny([]redis.Cmder{cmd}) {
			continue
		}
		for _, arg := range cmd.Args()[1:] {
			s, ok := arg.(string)
			if !ok || strings.HasPrefix(s, a.prefix) || !strings.Contains(s, a.prefix) {
				continue
			}
			whose := "your lock"
			switch {
			case c != nil && c.kind == lockCall:
				whose = "your Lock"
			case c != nil && c.kind == unlockCall:
				whose = "your Unlock"
			}
			a.outside = outsideSays(whose, strings.Replace(s, a.prefix, "lockstep:…:", 1))
			a.record(history.Record{Kind: history.RecBlind, Kinds: []steps.Kind{steps.ForeignRelease, steps.ForeignRenewal, steps.Idle}, What: a.outside})
			return
		}
	}
}

// outsideSays is the reason a run whose lock lives outside its keys gives, whose being "your
// Lock", "your Unlock" or "your lock".
func outsideSays(whose, key string) string {
	return fmt.Sprintf("%s wrote `%s`, outside the run's keys; lock the key Lock is given", whose, key)
}

// changesUnnamed reports whether cmds may change keys they do not name, so the watcher must read
// every key after them: FLUSHDB and its kin (redisenv.ChangesUnnamed), or a script whose body
// calls one. Hazard: a script sent by its digest (EVALSHA) is judged by its name alone.
func changesUnnamed(cmds []redis.Cmder) bool {
	for _, c := range payload(cmds) {
		if redisenv.ChangesUnnamed(c.Name()) {
			return true
		}
		if args := c.Args(); c.Name() == "eval" && len(args) > 1 {
			body := strings.ToLower(fmt.Sprint(args[1]))
			for _, n := range []string{"flushdb", "flushall", "swapdb"} {
				if strings.Contains(body, n) {
					return true
				}
			}
		}
	}
	return false
}

// keyChanges turns a watcher's changes into the history's.
func keyChanges(in []redisenv.KeyChange) []history.KeyChange {
	out := make([]history.KeyChange, len(in))
	for i, k := range in {
		out[i] = history.KeyChange{Key: k.Key, Before: k.Before.Print, After: k.After.Print, TTL: k.TTL}
	}
	return out
}

// cmds is cmds as the history keeps them: names and arguments, the run's prefix taken off key
// names, MULTI and EXEC left out.
func (a *Arena) cmds(cmds []redis.Cmder) []history.Cmd {
	cmds = payload(cmds)
	out := make([]history.Cmd, 0, len(cmds))
	for _, c := range cmds {
		args := c.Args()
		x := history.Cmd{Name: c.Name()}
		for _, arg := range args[1:] {
			s := fmt.Sprint(arg)
			if len(s) > 200 {
				s = s[:200] + "…" // a script's body: its first lines say what it is
			}
			x.Args = append(x.Args, strings.TrimPrefix(s, a.prefix))
		}
		out = append(out, x)
	}
	return out
}

// failover kills e's primary and promotes its replica, and records what the promoted replica
// lost. The caller holds e.turn, not a.mu.
func (a *Arena) failover(e *nodeEye) error {
	return a.nodeChange(e, history.NodeFailover, e.node.Failover)
}

// nodeChange runs change (a failover or a restart) on e's node and records what the node lost:
// every key the referee knew there that the node has no more, or has another value. The caller
// holds e.turn.
func (a *Arena) nodeChange(e *nodeEye, what string, change func(context.Context) error) error {
	ctx := context.Background()
	began := time.Now()
	if err := change(ctx); err != nil {
		a.recordNow(history.Record{Kind: history.RecNode, What: what, Node: e.i, Err: err.Error(), D: time.Since(began)})
		return err
	}
	took := time.Since(began) // Sentinel's election, a container's restart: said with the change
	now, err := e.w.Resync(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if what == history.NodeFailover {
		e.failedOver = true
	}
	if err != nil {
		a.record(history.Record{Kind: history.RecNode, What: what, Node: e.i, OK: true, D: took})
		a.record(history.Record{Kind: history.RecBlind, What: "after the " + what + " the referee cannot see the lock: " + err.Error(), Kinds: []steps.Kind{steps.ForeignRelease, steps.ForeignRenewal}})
		return nil
	}
	have := map[string]redisenv.KeyValue{}
	for _, kv := range now {
		have[kv.Key] = kv
	}
	var lost []history.KeyChange
	for key, value := range a.live.Values(e.i) {
		if kv, ok := have[key]; !ok || kv.Value.Print != value {
			lost = append(lost, history.KeyChange{Key: key, Before: value, After: kv.Value.Print, TTL: kv.TTL})
		}
	}
	// in key order, not the map's: the same run records the same change
	slices.SortFunc(lost, func(x, y history.KeyChange) int { return strings.Compare(x.Key, y.Key) })
	a.record(history.Record{Kind: history.RecNode, What: what, Node: e.i, OK: true, Keys: lost, D: took})
	return nil
}

// LockState is what the lock server says about the lock right now.
type LockState struct {
	Held       bool
	Key        string        // the key read: the holder's first key on the node, else the shop's lock key
	Value      string        // its value in words: a string's value, a hash's fields
	TTL        time.Duration // remaining; -1 when the key has no expiry
	Owner      int           // the buyer whose lock it is, 0 if none or unknown
	FailedOver bool          // the replica has been promoted
}

// Lock reads the lock on the first node: its value, remaining TTL, and whose it is, all from one
// reading.
func (a *Arena) Lock(ctx context.Context) LockState { return a.lockOn(ctx, a.nodes[0]) }

// Locks reads the lock on every node, in node order: a quorum lock is held where a majority of
// them say so.
func (a *Arena) Locks(ctx context.Context) []LockState {
	out := make([]LockState, len(a.nodes))
	for i, e := range a.nodes {
		out[i] = a.lockOn(ctx, e)
	}
	return out
}

// NodeNames names the lock nodes, in node order.
func (a *Arena) NodeNames() []string {
	names := make([]string, len(a.nodes))
	for i, e := range a.nodes {
		names[i] = e.node.Name()
	}
	return names
}

// lockOn reads the lock on e: the key of an active hold there (the shop's lock key when no hold
// has one), as the watcher reads it now.
func (a *Arena) lockOn(ctx context.Context, e *nodeEye) LockState {
	// The node's turn is held across the reading, so no command reaches the node between the
	// referee's answer (whose hold) and the watcher's (what the key holds): they describe one
	// moment, and the owner and the value agree.
	e.turn.Lock()
	defer e.turn.Unlock()
	a.mu.Lock()
	key, owner, ok := a.live.HeldKey(e.i)
	if !ok {
		key = LockName
	}
	st := LockState{FailedOver: e.failedOver, Key: key}
	a.mu.Unlock()
	v, ttl, err := e.w.Peek(ctx, key)
	if err != nil || !v.Exists {
		return st
	}
	st.Held, st.Value, st.TTL, st.Owner = true, v.Text, ttl, owner
	return st
}

// blindWatcher stands in for a watcher the node would not give (a user not allowed to read the
// lock, say): every command still goes out, and every observation fails with the reason.
type blindWatcher struct{ err error }

func (w blindWatcher) Observe(ctx context.Context, send func()) (redisenv.Change, error) {
	send()
	return redisenv.Change{}, w.err
}
func (w blindWatcher) ObserveAll(ctx context.Context, send func()) (redisenv.Change, error) {
	return w.Observe(ctx, send)
}
func (w blindWatcher) Peek(context.Context, string) (redisenv.Value, time.Duration, error) {
	return redisenv.Value{}, 0, w.err
}
func (w blindWatcher) Resync(context.Context) ([]redisenv.KeyValue, error) { return nil, w.err }
func (w blindWatcher) Close() error                                        { return nil }
