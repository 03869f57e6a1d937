package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	tests := []struct {
		data string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb"},
		{"", 3, ""},
		{"only", 1, "only"},
	}
	for _, tt := range tests {
		if got := string(tail([]byte(tt.data), tt.n)); got != tt.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tt.data, tt.n, got, tt.want)
		}
	}
}

func TestScanReady(t *testing.T) {
	ready := make(chan struct{})
	out := "starting etcd\ndevcluster ready: kubeconfig=/x/kubeconfig server=https://127.0.0.1:1\nbye\n"
	scanReady(strings.NewReader(out), ready)
	select {
	case <-ready:
	default:
		t.Error("scanReady did not signal the ready line")
	}

	notReady := make(chan struct{})
	scanReady(strings.NewReader("starting etcd\nfailed\n"), notReady)
	select {
	case <-notReady:
		t.Error("scanReady signaled without a ready line")
	default:
	}
}

func TestLogTails(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "logs", "kube-apiserver.log"), strings.Repeat("line\n", 100)+"last apiserver line\n")
	write(t, filepath.Join(dir, "logs", "etcd.log"), "etcd line\n")
	got := logTails(dir)
	for _, want := range []string{"kube-apiserver.log", "last apiserver line", "etcd.log", "etcd line"} {
		if !strings.Contains(got, want) {
			t.Errorf("logTails does not show %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "line\n"); n > 2*logTailLines {
		t.Errorf("logTails shows %d lines, want at most %d per log", n, logTailLines)
	}
	if err := os.RemoveAll(filepath.Join(dir, "logs")); err != nil {
		t.Fatal(err)
	}
	if got := logTails(dir); got != "" {
		t.Errorf("logTails without logs = %q, want empty", got)
	}
}

// fakeDevcluster writes a shell script that behaves like `berth-devcluster up
// --dir DIR`: it runs body with $dir set.
func fakeDevcluster(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "berth-devcluster")
	script := "#!/usr/bin/env bash\nset -eu\ndir=$3\nmkdir -p \"$dir/logs\"\n" + body + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

const fakeKubeconfig = `cat >"$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
KUBECONFIG
`

func TestStartCluster(t *testing.T) {
	bin := fakeDevcluster(t, fakeKubeconfig+`
trap 'echo stopped >"$dir/logs/stop.log"; exit 0' TERM
echo "starting"
echo "devcluster ready: kubeconfig=$dir/kubeconfig server=https://127.0.0.1:1"
while true; do sleep 0.05; done`)
	dir := t.TempDir()
	c, err := startCluster(t.Context(), bin, dir)
	if err != nil {
		t.Fatalf("startCluster: %v", err)
	}
	if c.config.Host != "https://127.0.0.1:1" {
		t.Errorf("config host = %q, want the kubeconfig's server", c.config.Host)
	}
	if err := c.stop(time.Minute); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "logs", "stop.log")); err != nil || string(data) != "stopped\n" {
		t.Errorf("cluster did not stop on SIGTERM: %q, %v", data, err)
	}
}

func TestStartClusterFails(t *testing.T) {
	tests := []struct {
		name, body, want string
		timeout          time.Duration
	}{
		{
			name:    "exits before ready",
			body:    `echo "error: cannot bind port" >&2; exit 3`,
			want:    "cannot bind port",
			timeout: time.Minute,
		},
		{
			name:    "never ready",
			body:    `echo "starting"; echo "waiting forever" >&2; while true; do sleep 0.05; done`,
			want:    "waiting forever",
			timeout: 500 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			_, err := startCluster(ctx, fakeDevcluster(t, tt.body), t.TempDir())
			if err == nil {
				t.Fatal("startCluster: got no error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not show %q", err, tt.want)
			}
		})
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	bin := fakeDevcluster(t, fakeKubeconfig+`
trap '' TERM
echo "devcluster ready"
while true; do sleep 0.05; done`)
	c, err := startCluster(t.Context(), bin, t.TempDir())
	if err != nil {
		t.Fatalf("startCluster: %v", err)
	}
	err = c.stop(200 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop of a cluster ignoring SIGTERM: error %v, want it killed", err)
	}
}
