package redisenv_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
)

// TestEmbeddedWatcherOnQuorum: the embedded backend's watcher keeps the same promise as the
// notifying one on a quorum node: a DEL is a change, a restart is survived, an expiry is Expired.
func TestEmbeddedWatcherOnQuorum(t *testing.T) {
	e, err := redisenv.NewEmbeddedNodes(3)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkWatcherOnQuorum(t, e)
}

// TestEmbeddedRestartKeepsHold: the embedded backend keeps the server backend's promise.
func TestEmbeddedRestartKeepsHold(t *testing.T) {
	e, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkRestartKeepsHold(t, e, e.Nodes()[0])
}

// TestEmbeddedWait: the embedded node answers WAIT as Redis would for its replica, without
// sending it to miniredis (which answers 0): 1 at once while the feed runs, 0 after its timeout
// once HoldReplication has held the feed back, and 0 after a failover (the promoted replica has
// none). Inside a testing/synctest bubble, so a WAIT that waits out its timeout takes exactly
// that on the bubble's clock.
func TestEmbeddedWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := redisenv.NewEmbedded()
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		ctx := context.Background()
		node := e.Nodes()[0]
		c := node.NewClient()
		defer c.Close()
		c.AddHook(node.Hook())
		wait := func(what string, n int, timeout time.Duration, want int64, took time.Duration) {
			t.Helper()
			start := time.Now()
			got, err := c.Wait(ctx, n, timeout).Result()
			if err != nil || got != want || time.Since(start) != took {
				t.Errorf("%s: WAIT %d %v answered %d, %v after %v; want %d after %v", what, n, timeout, got, err, time.Since(start), want, took)
			}
		}
		if err := c.Set(ctx, e.Prefix()+"k", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		wait("the feed runs", 1, 0, 1, 0)
		wait("the feed runs", 1, time.Second, 1, 0)
		wait("the feed runs", 2, 300*time.Millisecond, 1, 300*time.Millisecond)
		if got, err := c.Do(ctx, "WAIT", 1, 100).Int64(); err != nil || got != 1 {
			t.Errorf("WAIT by Do: %d, %v", got, err)
		}
		mini := redisenv.EmbeddedPrimary(node)
		sent := mini.CommandCount()
		node.HoldReplication()
		if err := c.Set(ctx, e.Prefix()+"held", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		wait("the feed is held", 1, 200*time.Millisecond, 0, 200*time.Millisecond)
		wait("the feed is held", 0, 0, 0, 0)
		if got := mini.CommandCount(); got != sent+1 {
			t.Errorf("miniredis was sent %d commands for a SET and two WAITs, want 1", got-sent)
		}
		if err := c.Do(ctx, "WAIT", 1, -1).Err(); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("WAIT with a negative timeout: %v", err)
		}
		if err := node.Failover(ctx); err != nil {
			t.Fatal(err)
		}
		wait("after a failover", 1, 50*time.Millisecond, 0, 50*time.Millisecond)
	})
}
