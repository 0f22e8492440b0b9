package redisenv_test

import (
	"testing"

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
