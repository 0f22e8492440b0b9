package lock_test

import (
	"testing"

	"github.com/lockstep-lab/lockstep/internal/steptest"
)

// TestScenarios plays every scenario against this step and checks its row of the matrix;
// go test -v names each violation, LAB_STRICT=1 fails on every one.
func TestScenarios(t *testing.T) {
	steptest.Run(t, steptest.Here(t))
}
