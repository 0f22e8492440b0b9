//go:build linux

package redisenv

import "syscall"

// sysProcAttr puts a redis-server in its own process group, so a terminal's Ctrl-C reaches only
// the lab (which then calls CloseAll), and asks the kernel to SIGKILL it when the lab dies without
// closing it. Hazard: Linux sends that signal when the OS thread that started the process exits,
// which the Go runtime does only for a goroutine that exits while locked to its thread.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
