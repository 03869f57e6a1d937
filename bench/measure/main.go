// Command berth-bench-measure runs a command and writes its span and peak resident memory to a
// file, as JSON; it exits as the command did. SIGINT and SIGTERM are passed on to the command,
// so that a long-running one (the controller) is stopped through it and still measured. It imports next to nothing, so that its own memory
// (which the kernel counts as the command's starting point) is a few megabytes.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

type measurement struct {
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	PeakRSS int64     `json:"peak_rss_bytes"`
}

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
		runErr = cmd.Wait()
	}
	m.End = time.Now()
	if cmd.ProcessState == nil {
		return 0, runErr
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.PeakRSS = ru.Maxrss * 1024 // kilobytes on Linux
	}
	data, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(*report, data, 0o644); err != nil {
		return 0, err
	}
	return cmd.ProcessState.ExitCode(), nil
}
