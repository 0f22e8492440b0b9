package explore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine a program started outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
