package main

import (
	"os"
	"syscall"
	"time"
)

// watchParent sends this component SIGTERM when the process that started it is gone, so that no
// component outlives "up", even when "up" is killed with SIGKILL (Pdeathsig covers most cases;
// this covers the rest).
func watchParent() {
	parent := os.Getppid()
	for range time.Tick(250 * time.Millisecond) {
		if os.Getppid() != parent {
			syscall.Kill(os.Getpid(), syscall.SIGTERM)
			return
		}
	}
}
