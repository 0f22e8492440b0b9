package redisenv_test

import (
	"testing"

	"github.com/lockstep-lab/lockstep/internal/redisenv"
)

// TestEmbeddedRestartKeepsHold: the embedded backend keeps the server backend's promise.
func TestEmbeddedRestartKeepsHold(t *testing.T) {
	e, err := redisenv.NewEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkRestartKeepsHold(t, e, e.Nodes()[0])
}
