//go:build !linux

package chart

import (
	"errors"
	"os"
	"syscall"
	"time"
)

func procAttr() *syscall.SysProcAttr { return nil }

func signaled(st *os.ProcessState) bool { return !st.Exited() }

// setLimits refuses: the renderer's limits are Linux's.
func setLimits(int64, time.Duration) error {
	return errors.New("sandboxed rendering needs Linux")
}
