package redisenv

// This package's tests call CloseAll and keep testing in the same process (-count=N), so they
// may open containers after it; TestContainerRefusedAfterCloseAll turns the refusal back on.
func init() { reopenAfterCloseAll.Store(true) }

// RefuseAfterCloseAll restores the container backend's refusal to open after CloseAll, as in a
// program, and returns the undo.
func RefuseAfterCloseAll() func() {
	reopenAfterCloseAll.Store(false)
	return func() { reopenAfterCloseAll.Store(true) }
}
