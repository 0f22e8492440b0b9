package arena

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstep-lab/lockstep/internal/history"
	"github.com/redis/go-redis/v9"
)

// Strays: goroutines a process's code started itself (a plain go statement, not Proc.Go) that
// sent its commands. Their commands are the process's, as the client that sent them says; a
// stray still running once the run's orders are over is said in a note (a server would keep it
// running), and the arena ends it when it closes the process, rather than wait for it.

// stray is one goroutine of a process that the lab did not start and that sent its commands.
type stray struct {
	site    string // where it was started, "lock.go:93"
	renewed bool   // a command of it extended a lease
	last    string // its latest command, as the timeline labels it ("UNLINK lock")
	carried bool   // last was carried out (not still on its way)
}

// ours marks goroutine g as one the lab started for p (an order's, one of Proc.Go's) while f
// runs: its commands are no stray's.
func (p *process) ours(f func()) {
	g := goid()
	p.mu.Lock()
	p.own[g]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.own[g]--; p.own[g] <= 0 {
			delete(p.own, g)
		}
		p.mu.Unlock()
	}()
	f()
}

// endIfClosed ends the calling goroutine, one that sends a command of p, if p has been closed: the
// run is over, and nothing it sends is the run's any more. Its deferred calls run. Hazard: only a
// goroutine the lab no longer waits for sends then (a stray; an order deaf to its context, its
// process dead); a lock it holds without a defer stays held.
func (p *process) endIfClosed() {
	if p.isClosed() {
		runtime.Goexit()
	}
}

// sender is called on the goroutine that sends cmds of p to node, as they leave: one the lab
// did not start is noted as a stray, with where it was started and what it is sending. It returns
// the goroutine.
func (p *process) sender(node int, cmds []redis.Cmder) int64 {
	g := goid()
	p.mu.Lock()
	if p.own[g] > 0 {
		p.mu.Unlock()
		return g
	}
	s := p.strays[g]
	if s == nil {
		s = &stray{site: startedAt()}
		p.strays[g] = s
	}
	p.mu.Unlock()
	label := p.a.label(cmds, node)
	p.mu.Lock()
	s.last, s.carried = label, false
	p.mu.Unlock()
	return g
}

// sent notes, if goroutine g is a stray of p, what its command cmds to node did, seq being the
// command's place in the node's order (0: not carried out).
func (p *process) sent(g int64, node int, cmds []redis.Cmder, seq int64) {
	p.mu.Lock()
	s := p.strays[g]
	p.mu.Unlock()
	if s == nil || seq == 0 {
		return
	}
	a := p.a
	a.mu.Lock()
	renewed := a.live.Renewed(p.n, node, seq)
	a.mu.Unlock()
	p.mu.Lock()
	s.renewed = s.renewed || renewed
	s.carried = true
	p.mu.Unlock()
}

// isClosed tells whether the process has been closed: the run is over.
func (p *process) isClosed() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// startedAt is where the calling goroutine was started, as its stack's "created by" frame says
// it: the file's name and line ("lock.go:93"), or "" where the stack does not say.
func startedAt() string {
	buf := make([]byte, 64<<10)
	b := buf[:runtime.Stack(buf, false)]
	i := bytes.LastIndex(b, []byte("\ncreated by "))
	if i < 0 {
		return ""
	}
	lines := strings.Split(string(b[i+1:]), "\n")
	if len(lines) < 2 {
		return ""
	}
	at := strings.TrimSpace(lines[1])
	if j := strings.LastIndex(at, " +0x"); j >= 0 {
		at = at[:j]
	}
	return filepath.Base(at)
}

// alive is the set of goroutines running now, by id.
func alive() map[int64]bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int64]bool{}
	for _, line := range bytes.Split(buf, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("goroutine ")); ok {
			if i := bytes.IndexByte(rest, ' '); i > 0 {
				if id, err := strconv.ParseInt(string(rest[:i]), 10, 64); err == nil {
					out[id] = true
				}
			}
		}
	}
	return out
}

// noteStrays records, once the run's orders are over, a note for each place a buyer's stray
// goroutines still running were started: a server would keep them running, doing what their
// latest command did. Hazard: a stray that has sent nothing yet (asleep before its first
// renewal) is not known here; if it outlives the run, the grader names it from its stack.
func (a *Arena) noteStrays() {
	a.mu.Lock()
	procs := slices.Clone(a.procs)
	a.mu.Unlock()
	live := alive()
	type site struct {
		buyers []int
		doing  string
	}
	var order []string
	sites := map[string]*site{}
	for _, p := range procs {
		p.mu.Lock()
		var mine []*stray
		for g, s := range p.strays {
			if live[g] {
				mine = append(mine, s)
			}
		}
		p.mu.Unlock()
		slices.SortFunc(mine, func(x, y *stray) int { return strings.Compare(x.site, y.site) })
		for _, s := range mine {
			x := sites[s.site]
			if x == nil {
				x = &site{}
				sites[s.site] = x
				order = append(order, s.site)
			}
			if !slices.Contains(x.buyers, p.n) {
				x.buyers = append(x.buyers, p.n)
			}
			// a site's note says what its strays would go on doing: renewing, where one did
			if d := a.strayDoing(p, s); x.doing == "" || strings.Contains(d, "renewing") && !strings.Contains(x.doing, "renewing") {
				x.doing = d
			}
		}
	}
	for _, at := range order {
		a.recordNow(history.Record{Kind: history.RecNote, What: straySays(at, sites[at].buyers, sites[at].doing)})
	}
}

// strayDoing says what stray s of p would go on doing in a server: renewing (a command of it
// extended a lease), or what it sent last (or is sending).
func (a *Arena) strayDoing(p *process, s *stray) string {
	a.mu.Lock()
	holds := len(a.live.HoldKeys(p.n)) > 0
	a.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case s.renewed && holds:
		return "; in a server it would keep running: renewing the lock"
	case s.renewed:
		return "; in a server it would keep running: renewing a lock it no longer holds"
	case s.carried:
		return ", its latest command " + s.last
	}
	return ", its " + s.last + " on its way"
}

// straySays is the note on buyers' goroutines started at at (a file and line, or "") that were
// still running after the last order, doing what the words say (strayDoing).
func straySays(at string, buyers []int, doing string) string {
	where := "goroutine"
	if at != "" {
		where += " started at " + at
	}
	if len(buyers) == 1 {
		return fmt.Sprintf("buyer %d's %s (not with Proc.Go) was still running after the last order%s", buyers[0], where, doing)
	}
	var ns []string
	for _, n := range buyers {
		ns = append(ns, strconv.Itoa(n))
	}
	doing = strings.NewReplacer("it would keep", "they would keep", "its latest", "the latest", ", its ", ", one's ").Replace(doing)
	return fmt.Sprintf("buyers %s each had a %s (not with Proc.Go) still running after the last order%s", JoinAnd(ns), where, doing)
}

// endStrays gives a closed process's strays time to send once more and end (sender), in virtual
// time, where waiting costs nothing: a goroutine left waiting when the run's bubble ends would
// take the run with it. On the wall clock they end at their next command, and the run does not
// wait for them.
func (a *Arena) endStrays() {
	if a.virtual {
		time.Sleep(strayGrace * a.t.TTL)
	}
}

// strayGrace is how long, in TTLs, a closed run gives its strays to end in virtual time: a
// renewal every TTL/3 sends twice in it.
const strayGrace = 2

// label names cmds, sent to node outside any call, as the timeline labels them ("UNLINK lock").
func (a *Arena) label(cmds []redis.Cmder, node int) string {
	hc := a.cmds(cmds)
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.TrimSuffix(a.live.CommandOf(hc, node, 0).Label, " outside Lock/Unlock")
}
