//go:build unix

package plugins

import (
	"os/exec"
	"syscall"
)

// killGroup makes cmd a process group of its own, killed as a whole when cmd's context ends:
// a plugin that is a shell script dies with the commands it started.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
