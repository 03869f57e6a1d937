package chart

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
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

// spareThreads is how many threads the renderer may start once it is limited. The runtime starts
// one when a thread blocks in a system call or a processor would otherwise idle, more often on a
// busy machine; linked with the C library, each takes a stack of the stack limit's size (8 MiB
// by default) of address space, which is not the template's memory.
const spareThreads = 8

// defaultThreadStack is the C library's thread stack when the stack limit is unlimited.
const defaultThreadStack = 32 << 20

// setLimits limits this process: its address space to what it holds now plus memory plus the
// stacks of spareThreads more threads, its threads to that many more, and its CPU time to cpu
// (rounded up to a second). There the kernel signals SIGXCPU, on which the process exits with
// cpuLimitExit; a second later, if it has not, the kernel kills it.
func setLimits(memory int64, cpu time.Duration) error {
	held, err := addressSpace()
	if err != nil {
		return err
	}
	threads, err := threadCount()
	if err != nil {
		return err
	}
	var stack syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &stack); err != nil {
		return fmt.Errorf("read the stack limit: %w", err)
	}
	perThread := int64(defaultThreadStack)
	if stack.Cur > 0 && stack.Cur < defaultThreadStack {
		perThread = int64(stack.Cur)
	}
	perThread += int64(os.Getpagesize()) // the stack's guard page
	debug.SetMaxThreads(threads + spareThreads)
	as := uint64(held + memory + spareThreads*perThread)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("limit memory: %w", err)
	}
	secs := uint64(cpuSeconds(cpu) / time.Second)
	exitAtCPULimit()
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: secs, Max: secs + 1}); err != nil {
		return fmt.Errorf("limit CPU time: %w", err)
	}
	return nil
}

// threadCount is how many threads this process runs.
func threadCount() (int, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if n, ok := strings.CutPrefix(line, "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(n))
		}
	}
	return 0, fmt.Errorf("read /proc/self/status: no Threads line")
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

// exitAtCPULimit makes this process exit with cpuLimitExit when the kernel says it reached its
// CPU limit. The kernel counts CPU time in ticks, which can charge a process that runs in short
// bursts more than it ran; its own SIGXCPU, not the time the process was seen to take, says
// which limit stopped it.
func exitAtCPULimit() {
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		os.Exit(cpuLimitExit)
	}()
}
