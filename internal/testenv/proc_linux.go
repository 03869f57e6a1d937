package testenv

import "syscall"

// sysProcAttr puts the cluster in a process group of its own, so that it can
// be killed with its children, and stops it when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// killGroup kills the process group led by pid.
func killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}
