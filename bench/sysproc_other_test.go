//go:build !linux

package bench

import "os/exec"

// setPdeathsig is Linux-only; elsewhere a redis-server outlives a test binary that panics.
func setPdeathsig(cmd *exec.Cmd) {}
