package arena

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine an arena started outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
