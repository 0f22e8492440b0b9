package explore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// noLeak fails t if a goroutine a program started outlives it. TestExplore has none: a bubble
// whose clock a lock stopped is left behind there, with its goroutines, as grade leaves one.
func noLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}
