package toolchain

import (
	"os/exec"
	"syscall"
)

// KillGroupOnCancel starts cmd in a process group of its own and makes the
// cancellation of its context kill that whole group, not only the direct
// child: nvcc runs cicc and ptxas, ncu runs Python, a driver script runs the
// candidate, and a timeout has to stop all of them. Call it before Start or
// Run; the caller still chooses cmd.WaitDelay.
func KillGroupOnCancel(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
