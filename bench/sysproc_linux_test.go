package bench

import (
	"os/exec"
	"syscall"
)

// setPdeathsig kills redis-server if the test binary dies without cleaning up (a -timeout panic).
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
