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

// The command's peak memory is split into what it allocated and the files it mapped.
func TestSplitsMemory(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "berth-bench-measure")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	report := filepath.Join(dir, "report.json")
	// The shell holds 32 MiB in a variable for a while: anonymous memory.
	cmd := exec.Command(bin, "--report", report, "--", "sh", "-c", `x=$(head -c 33554432 /dev/zero | tr '\0' a); sleep 0.5; echo ${#x}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var m measurement
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m.PeakAnon < 32<<20 || m.PeakFile <= 0 || m.PeakAnon+m.PeakFile > m.PeakRSS+(4<<20) {
		t.Errorf("peaks: anonymous %d, files %d, RSS %d: want at least 32 MiB allocated, some file pages, and no more than the RSS in all", m.PeakAnon, m.PeakFile, m.PeakRSS)
	}
	// Filling 32 MiB takes processor time, counted with the command's waited-for children.
	if m.UserCPU+m.SystemCPU <= 0 || m.UserCPU+m.SystemCPU > m.End.Sub(m.Start)*4 {
		t.Errorf("processor time: user %s, system %s over %s: want some, and no more than the machine could give", m.UserCPU, m.SystemCPU, m.End.Sub(m.Start))
	}
}

func TestStatusBytes(t *testing.T) {
	status := []byte("Name:\tberth\nVmHWM:\t   90000 kB\nRssAnon:\t   12345 kB\nRssFile:\t   70000 kB\n")
	if got := statusBytes(status, "RssAnon:"); got != 12345<<10 {
		t.Errorf("RssAnon: %d, want %d", got, 12345<<10)
	}
	if got := statusBytes(status, "RssShmem:"); got != 0 {
		t.Errorf("RssShmem: %d, want 0 (absent)", got)
	}
}
