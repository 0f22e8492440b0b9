package redisenv

import (
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// This package's tests call CloseAll and keep testing in the same process (-count=N), so they
// may open servers and containers after it; TestContainerRefusedAfterCloseAll turns the refusal
// back on.
func init() { reopenAfterCloseAll.Store(true) }

// RefuseAfterCloseAll restores the server and container backends' refusal to open after
// CloseAll, as in a program, and returns the undo.
func RefuseAfterCloseAll() func() {
	reopenAfterCloseAll.Store(false)
	return func() { reopenAfterCloseAll.Store(true) }
}

// ReplicaAddr is the address of n's replica, or "" if it has none (promoted, or not a replNode).
func ReplicaAddr(n Node) string {
	rn, ok := n.(*replNode)
	if !ok {
		return ""
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.replica == nil {
		return ""
	}
	return rn.replica.addr()
}

// SentinelLog is what n's Sentinels last wrote (the last few KiB of each), or "" where no
// Sentinel watches n.
func SentinelLog(n Node) string {
	rn, ok := n.(*replNode)
	if !ok || rn.sent == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range rn.sent.procs {
		p.out.mu.Lock()
		b.Write(p.out.buf)
		p.out.mu.Unlock()
	}
	return b.String()
}

// SentinelAddrs are the addresses of n's Sentinels, or nil where none watches n.
func SentinelAddrs(n Node) []string {
	rn, ok := n.(*replNode)
	if !ok || rn.sent == nil {
		return nil
	}
	return rn.sent.addrs
}

// SentinelOutage is the sentinel backend's Outage.
func SentinelOutage() time.Duration { return sentinelOutage }

// EmbeddedPrimary is the miniredis that is n's primary now.
func EmbeddedPrimary(n Node) *miniredis.Miniredis { return n.(*embNode).current() }

// SentinelDownAfter is the Sentinels' down-after-milliseconds.
func SentinelDownAfter() time.Duration { return sentinelDownAfter }
