//go:build !linux

package redisenv

import "syscall"

// sysProcAttr is the default elsewhere. Hazard: without Linux's parent-death signal, a lab killed
// without CloseAll leaves its redis-server processes running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
