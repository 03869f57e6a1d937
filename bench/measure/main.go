// Command berth-bench-measure runs a command and writes its span and peak resident memory to a
// file, as JSON, with that memory split, sampled every 2 ms from /proc, into what the command
// allocated (anonymous pages) and the pages of files it mapped (its binary's, mostly); it exits
// as the command did. SIGINT and SIGTERM are passed on to the command,
// so that a long-running one (the controller) is stopped through it and still measured. It imports next to nothing, so that its own memory
// (which the kernel counts as the command's starting point) is a few megabytes.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

type measurement struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	PeakRSS int64     `json:"peak_rss_bytes"`
	// PeakAnon and PeakFile are the largest RssAnon and RssFile of /proc/PID/status seen in
	// samples every sampleInterval: a peak shorter than that may be missed.
	PeakAnon int64 `json:"peak_anon_bytes"`
	PeakFile int64 `json:"peak_file_bytes"`
	// UserCPU and SystemCPU are the processor time the command took in user space and in the
	// kernel (its page faults, mostly), in nanoseconds.
	UserCPU   time.Duration `json:"user_cpu_ns"`
	SystemCPU time.Duration `json:"system_cpu_ns"`
}

// sampleInterval is how often the command's memory is read from /proc.
const sampleInterval = 2 * time.Millisecond

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "berth-bench-measure: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("berth-bench-measure", flag.ContinueOnError)
	report := fs.String("report", "", "file to write the measurement to, as JSON")
	if err := fs.Parse(args); err != nil {
		return 0, err
	}
	argv := fs.Args()
	if *report == "" || len(argv) == 0 {
		return 0, errors.New("usage: berth-bench-measure --report FILE -- COMMAND [ARG...]")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	m := measurement{Start: time.Now()}
	runErr := cmd.Start()
	if runErr == nil {
		go func() {
			for s := range signals {
				cmd.Process.Signal(s)
			}
		}()
		done, sampled := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(sampled)
			sample(cmd.Process.Pid, done, &m)
		}()
		runErr = cmd.Wait()
		close(done)
		<-sampled
	}
	m.End = time.Now()
	if cmd.ProcessState == nil {
		return 0, runErr
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.PeakRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	m.UserCPU, m.SystemCPU = cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
	data, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(*report, data, 0o644); err != nil {
		return 0, err
	}
	return cmd.ProcessState.ExitCode(), nil
}

// sample reads the memory of process pid every sampleInterval until done, keeping the largest
// RssAnon and RssFile in m.
func sample(pid int, done <-chan struct{}, m *measurement) {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	tick := time.NewTicker(sampleInterval)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			m.PeakAnon = max(m.PeakAnon, statusBytes(data, "RssAnon:"))
			m.PeakFile = max(m.PeakFile, statusBytes(data, "RssFile:"))
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// statusBytes is the value of field (in kB) of a /proc/PID/status, in bytes; 0 when absent.
func statusBytes(status []byte, field string) int64 {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte(field))
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		return kb << 10
	}
	return 0
}
