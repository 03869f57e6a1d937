package chart

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procAttr makes the renderer die with the thread that started it.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// signaled says the process ended by a signal.
func signaled(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// setLimits limits this process: its address space to what it holds now plus memory, its CPU
// time to cpu (rounded up to a second; the kernel kills it there).
func setLimits(memory int64, cpu time.Duration) error {
	held, err := addressSpace()
	if err != nil {
		return err
	}
	as := uint64(held + memory)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("limit memory: %w", err)
	}
	secs := uint64(cpuSeconds(cpu) / time.Second)
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs}); err != nil {
		return fmt.Errorf("limit CPU time: %w", err)
	}
	return nil
}

// addressSpace is the size of this process's address space, in bytes.
func addressSpace() (int64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	pages, err := strconv.ParseInt(strings.Fields(string(data) + " x")[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read /proc/self/statm: %w", err)
	}
	return pages * int64(os.Getpagesize()), nil
}
