package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for berth-devcluster: "up" starts its components as
// child processes of os.Executable(), which is this binary while testing.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && (os.Args[1] == "up" || os.Args[1] == "component") {
		if err := run(os.Args[1:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startUp runs "up" in a new directory, with extra arguments, and waits for its ready line.
func startUp(t *testing.T, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, append([]string{"up", "--dir", dir}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if !strings.HasPrefix(line, "devcluster ready: kubeconfig="+filepath.Join(dir, "kubeconfig")) {
			t.Fatalf("first line %q, want the ready line; logs in %s", line, dir)
		}
	case <-time.After(readyTimeout):
		t.Fatalf("no ready line; logs in %s", dir)
	}
	return cmd, dir
}

func children(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces, so split after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// gone waits until none of pids is alive (or a zombie) any more.
func gone(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, p := range pids {
		for {
			stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
			if err != nil || strings.Contains(string(stat), ") Z ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running: %s", p, stat)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func TestUpStopsEverythingOnSIGTERM(t *testing.T) {
	cmd, _ := startUp(t)
	kids := children(t, cmd.Process.Pid)
	if len(kids) != 4 {
		t.Errorf("up runs %d components, want 4 (etcd, kube-apiserver, kube-controller-manager, kubelet)", len(kids))
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("up exited with %v after SIGTERM, want 0", err)
	}
	gone(t, kids)
}

func TestComponentsDieWithKilledUp(t *testing.T) {
	cmd, _ := startUp(t)
	kids := children(t, cmd.Process.Pid)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	gone(t, kids)
}

func TestUpRejectsBadFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string // a part of the error naming the flag; "" for any error
	}{
		{nil, "--dir"},
		{[]string{"--dir", t.TempDir(), "--nodes", "0"}, "--nodes"},
		{[]string{"--bogus"}, "bogus"},
		{[]string{"--dir", t.TempDir(), "--job-batch-period", "0s"}, "--job-batch-period"},
		{[]string{"--dir", t.TempDir(), "--job-batch-period", "-1s"}, "--job-batch-period"},
		{[]string{"--dir", t.TempDir(), "--job-batch-period", "soon"}, "job-batch-period"},
		{[]string{"--dir", t.TempDir(), "--controller-qps", "0"}, "--controller-qps"},
	}
	for _, tt := range tests {
		err := up(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("up %v: error %v, want one containing %q", tt.args, err, tt.wantErr)
		}
	}
}
