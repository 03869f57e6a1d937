package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A long-running command is stopped through berth-bench-measure: the signal reaches the command,
// which exits as it chooses, and the measurement is still written.
func TestSignalsReachTheCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "berth-bench-measure")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	report, ready := filepath.Join(dir, "report.json"), filepath.Join(dir, "ready")
	cmd := exec.Command(bin, "--report", report, "--", "sh", "-c",
		`trap 'exit 7' TERM; : > "$0"; while :; do sleep 1; done`, ready)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 7 {
			t.Fatalf("berth-bench-measure exited with %v, want the command's exit code 7", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("berth-bench-measure did not exit after SIGTERM")
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no measurement: %v", err)
	}
	var m measurement
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.PeakRSS <= 0 || !m.End.After(m.Start) {
		t.Errorf("measurement %+v: want a peak memory and a span", m)
	}
}
