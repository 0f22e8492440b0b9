package redisenv

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
