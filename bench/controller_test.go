package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseCounts(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"100,1000", []int{100, 1000}, false},
		{" 5 ", []int{5}, false},
		{"100,", nil, true},
		{"0", nil, true},
		{"ten", nil, true},
	}
	for _, tt := range tests {
		got, err := parseCounts(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseCounts(%q) error %v, want error %v", tt.in, err, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseCounts(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestFlagDefault(t *testing.T) {
	help := `Flags:
      --cache-dir string                   directory of the controller's caches
      --concurrency int                    how many Releases are reconciled at once (default 4)
      --leader-elect                       elect a leader
`
	tests := []struct {
		name    string
		want    int
		wantErr bool
	}{
		{"concurrency", 4, false},
		{"leader-elect", 0, true}, // no default
		{"cache", 0, true},        // not a flag of its own
		{"qps", 0, true},
	}
	for _, tt := range tests {
		got, err := flagDefault(help, tt.name)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("flagDefault(%q) = %d, %v; want %d, error %v", tt.name, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestReleaseReady(t *testing.T) {
	release := func(generation, observed, readyGeneration int64, ready string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": "app", "generation": generation},
			"status": map[string]any{
				"observedGeneration": observed,
				"conditions": []any{
					map[string]any{"type": "Reconciling", "status": "False", "observedGeneration": readyGeneration},
					map[string]any{"type": "Ready", "status": ready, "observedGeneration": readyGeneration},
				},
			},
		}}
		return u
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"ready", release(2, 2, 2, "True"), true},
		{"not ready", release(2, 2, 2, "False"), false},
		{"unknown", release(1, 1, 1, "Unknown"), false},
		{"status of an older spec", release(3, 2, 2, "True"), false},
		{"condition of an older spec", release(3, 3, 2, "True"), false},
		{"no status", &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"generation": int64(1)}}}, false},
	}
	for _, tt := range tests {
		if got := releaseReady(tt.obj); got != tt.want {
			t.Errorf("%s: releaseReady = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestProcFields(t *testing.T) {
	status := "Name:\tberth\nVmPeak:\t 2000000 kB\nVmHWM:\t   81920 kB\nVmRSS:\t   40960 kB\n"
	if got, err := statusField(status, "VmHWM"); err != nil || got != 80<<20 {
		t.Errorf("VmHWM = %d, %v; want %d", got, err, 80<<20)
	}
	if _, err := statusField(status, "VmSwap"); err == nil {
		t.Error("VmSwap: no error for a missing field")
	}
	// The command name may hold spaces and parentheses; utime 250 and stime 50 ticks.
	stat := "1234 (berth (x) y) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 200"
	if got, err := cpuSeconds(stat); err != nil || got != 3 {
		t.Errorf("cpuSeconds = %v, %v; want 3", got, err)
	}
	if _, err := cpuSeconds("1234 (berth) S 1"); err == nil {
		t.Error("cpuSeconds of a short line: no error")
	}
}

func TestSumTree(t *testing.T) {
	// 10 is the devcluster; 11 and 12 its components, 13 a child of 12; 20 is someone else's.
	parent := map[int]int{10: 1, 11: 10, 12: 10, 13: 12, 20: 1, 21: 20}
	cpu := map[int]float64{10: 1, 11: 2, 12: 4, 13: 8, 20: 16, 21: 32}
	if got := sumTree(10, parent, cpu); got != 15 {
		t.Errorf("sumTree(10) = %v, want 15", got)
	}
	pid, ppid, secs, err := parseStat("13 (kube apiserver) S 12 13 13 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000 200")
	if err != nil || pid != 13 || ppid != 12 || secs != 3 {
		t.Errorf("parseStat = %d, %d, %v, %v; want 13, 12, 3", pid, ppid, secs, err)
	}
}

func TestAuditLogCountsTheControllerByResource(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	at := func(s string) string { return "2026-01-02T03:04:" + s + "Z" }
	lines := []string{
		`{"userAgent":"berth-controller/dev","verb":"patch","objectRef":{"resource":"releases","subresource":"status"},"requestReceivedTimestamp":"` + at("01.000000") + `"}`,
		`{"userAgent":"berth-controller/dev","verb":"create","objectRef":{"resource":"events"},"requestReceivedTimestamp":"` + at("01.100000") + `"}`,
		`{"userAgent":"berth-controller/dev","verb":"get","objectRef":{"resource":"secrets"},"requestReceivedTimestamp":"` + at("01.200000") + `"}`,
		`{"userAgent":"berth-controller/dev","verb":"get","requestReceivedTimestamp":"` + at("01.300000") + `"}`, // discovery: no object
		`{"userAgent":"berth/dev","verb":"patch","objectRef":{"resource":"releases"},"requestReceivedTimestamp":"` + at("01.400000") + `"}`,
		`{"userAgent":"berth-controller","verb":"watch","objectRef":{"resource":"releases"},"requestReceivedTimestamp":"` + at("03.000000") + `"}`, // after the window
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &auditLog{path: path}
	n, got, err := a.count(base, base.Add(2*time.Second), userAgentOf("controller"), byVerbAndResource)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"patch releases/status": 1, "create events": 1, "get secrets": 1, "get": 1}
	if diff := cmp.Diff(want, got); diff != "" || n != 4 {
		t.Errorf("%d requests (-want +got):\n%s", n, diff)
	}
	if w := writes(got); w != 2 {
		t.Errorf("writes = %d, want 2 (the patch and the create)", w)
	}
}

func TestAuditLogCountsEachQueryInOnePass(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	event := func(ua, verb string, s int, extra string) string {
		return `{"userAgent":"` + ua + `","verb":"` + verb + `","objectRef":{"resource":"secrets"` + extra + `},"requestReceivedTimestamp":"` + base.Add(time.Duration(s)*time.Second).Format(time.RFC3339Nano) + `"}`
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	write := func(lines ...string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	// A line longer than the reader's buffer, and one the API server has not finished writing.
	long := event("berth-controller/dev", "get", 2, `,"name":"`+strings.Repeat("x", 3<<20)+`"`)
	write(event("berth-controller/dev", "get", 0, ""), event("berth-controller/dev", "list", 1, ""), long,
		event("kube-controller-manager/v1.35.0/deployment-controller", "update", 3, ""), event("berth-controller/dev", "create", 11, ""))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	partial := event("berth-controller/dev", "delete", 12, "")
	f.WriteString(partial[:20])
	f.Close()

	a := &auditLog{path: path}
	ready := &auditQuery{start: base, end: base.Add(5 * time.Second), matches: userAgentOf("controller"), key: byVerb}
	rollout := &auditQuery{start: base, end: base.Add(5 * time.Second), matches: clusterController("deployment-controller"), key: byVerb}
	steady := &auditQuery{start: base.Add(5 * time.Second), end: base.Add(10 * time.Second), matches: userAgentOf("controller"), key: byVerb}
	if err := a.countEach(ready, rollout, steady); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"get": 2, "list": 1}, ready.Counts); diff != "" || ready.Total != 3 {
		t.Errorf("until Ready: %d (-want +got):\n%s", ready.Total, diff)
	}
	if rollout.Total != 1 || steady.Total != 0 || len(steady.Counts) != 0 {
		t.Errorf("rollout %d, steady %d %v; want 1, 0", rollout.Total, steady.Total, steady.Counts)
	}
	if len(a.later) != 1 {
		t.Errorf("kept %d events after the last window, want the one at 11 s", len(a.later))
	}
	// The rest of the partial line, then the next count: the event kept and the finished line.
	f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(partial[20:] + "\n")
	f.Close()
	n, byVerb, err := a.requests(base.Add(10*time.Second), base.Add(20*time.Second), userAgentOf("controller"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"create": 1, "delete": 1}, byVerb); diff != "" || n != 2 {
		t.Errorf("deletion: %d (-want +got):\n%s", n, diff)
	}
}

func TestControllerGoals(t *testing.T) {
	runs := []controllerRun{
		{Releases: 100, ControllerQPS: 20, ReadySeconds: 10, PeakRSSReadyBytes: 60 << 20, PeakRSSBytes: 70 << 20, SteadySeconds: 60},
		{Releases: 1000, Hung: 100, ControllerQPS: 20, ReadySeconds: 95, PeakRSSReadyBytes: 150 << 20, PeakRSSBytes: 190 << 20, SteadySeconds: 60, SteadyWrites: 2, SteadyIndexDownloads: 1},
		{Releases: 1000, ControllerQPS: 1000, ReadySeconds: 0, Error: "not Ready"},
	}
	want := []controllerGoal{
		{Goal: "1000 Releases Ready in at most 90 s (cluster's rate limit 20/s, 100 hung Releases beside)", Measured: "95.0 s", Met: "no"},
		{Goal: "controller peak memory at most 200 MiB with 1000 Releases (cluster's rate limit 20/s, 100 hung Releases beside)", Measured: "190 MiB", Met: "yes"},
		{Goal: "1000 Releases Ready in at most 90 s (cluster's rate limit 1000/s)", Measured: "failed", Met: "no"},
		{Goal: "controller peak memory at most 200 MiB with 1000 Releases (cluster's rate limit 1000/s)", Measured: "failed", Met: "no"},
		{Goal: "no writes in the steady state after every Release is Ready",
			Measured: "0 in 60.0 s (100 Releases at 20/s), 2 in 60.0 s (1000 Releases at 20/s), 1000 Releases at 1000/s: not measured", Met: "no"},
		{Goal: "no chart or index downloads in the steady state",
			Measured: "0 index and 0 chart downloads in 60.0 s (100 Releases at 20/s), 1 index and 0 chart downloads in 60.0 s (1000 Releases at 20/s), 1000 Releases at 1000/s: not measured", Met: "no"},
	}
	if diff := cmp.Diff(want, controllerGoals("app", runs)); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
	// Without a run of 1000 Releases the goals of 1000 are not judged.
	got := controllerGoals("app", runs[:1])
	if len(got) != 3 || got[0].Met != "–" || got[1].Met != "yes" || got[2].Met != "yes" {
		t.Errorf("goals of 100 Releases alone: %+v", got)
	}
}

func TestControllerMarkdown(t *testing.T) {
	r := controllerResults{
		Machine: machine{CPU: "cpu", CPUs: 2, Memory: "8 GiB", Kernel: "Linux 6", Go: "go1.26", Berth: "berth dev"},
		Started: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC),
		Runs: []controllerRun{{Releases: 1000, Hung: 100, Interval: "1m", Concurrency: 4, ControllerQPS: 20, CreateSeconds: 3, ReadySeconds: 150,
			PeakRSSReadyBytes: 100 << 20, PeakRSSBytes: 120 << 20, CPUSecondsReady: 80, ClusterCPUSecondsReady: 150, LoadAverage: 3.5, Requests: 20000, ChartRequests: 2000,
			RequestsByResource: map[string]int{"get secrets": 5000, "patch releases/status": 3000},
			SteadySeconds:      60, SteadyRequests: 5, SteadyByVerb: map[string]int{"create events": 1, "get secrets": 4}, SteadyWrites: 1, SteadyHungWrites: 1,
			SteadyIndexDownloads: 2, SteadyChartDownloads: 0, SteadyRevalidations: 30,
			DeleteSeconds: 40, DeleteRequests: 9000,
			ClusterRequests: map[string]int{"deployment-controller": 3000, "replicaset-controller": 2500}}},
	}
	md := r.markdown()
	for _, want := range []string{
		"`--concurrency 4`",
		"Every Release at `interval: 1m`.",
		"| hung Releases | cluster's rate limit |",
		"| 1000 | 100 | 20 | 2 m 30 s | 3.0 s | 100 / 120 MiB | 80.0 s / 150.0 s (3.5) | 20000 (20.0) | 2000 | 1 (5) in 60.0 s, 1 of the writes for the hung Releases | 2 / 0 (30) | 40.0 s (9000) |",
		fluxAnchor,
		"1000 Releases at 20/s: 3000 requests of the Deployment controller and 2500 of the ReplicaSet controller, 2 m 30 s at that rate.",
		"| request | 1000 Releases, 20/s |\n|---|---|\n| get secrets | 5000 |\n| patch releases/status | 3000 |",
		"Writes in the steady state: 1000 Releases at 20/s: 1 create events.",
		"| 1000 Releases Ready in at most 90 s (cluster's rate limit 20/s, 100 hung Releases beside) | 2 m 30 s | no |",
		"| no chart or index downloads in the steady state | 2 index and 0 chart downloads in 60.0 s (1000 Releases at 20/s) | no |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestControllerMarkdownWithoutDeletion(t *testing.T) {
	r := controllerResults{Runs: []controllerRun{
		{Releases: 200, ControllerQPS: 1000, ReadySeconds: 20, Requests: 4000, SteadySeconds: 10, DeleteSkipped: true},
		{Releases: 100, ControllerQPS: 1000, ReadySeconds: 10, Requests: 2000, SteadySeconds: 10, DeleteSeconds: 12, DeleteRequests: 2100},
	}}
	md := r.markdown()
	for _, want := range []string{"| 0 / 0 (0) | not measured |\n", "| 0 / 0 (0) | 12.0 s (2100) |\n"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	cfg, err := parseControllerFlags([]string{"--delete=false"})
	if err != nil || cfg.delete {
		t.Errorf("--delete=false: delete %v, %v", cfg.delete, err)
	}
	if cfg, err := parseControllerFlags(nil); err != nil || !cfg.delete {
		t.Errorf("by default: delete %v, %v", cfg.delete, err)
	}
}

func TestDurationText(t *testing.T) {
	for s, want := range map[float64]string{0.42: "0.4 s", 89.96: "90.0 s", 279: "4 m 39 s", 120: "2 m 00 s"} {
		if got := durationText(s); got != want {
			t.Errorf("durationText(%v) = %q, want %q", s, got, want)
		}
	}
}

func TestControllerResultsSayTheyWereInterrupted(t *testing.T) {
	md := controllerResults{Interrupted: true}.markdown()
	if !strings.Contains(md, "Stopped before every run was made") {
		t.Errorf("the tables of an interrupted run do not say so:\n%s", md)
	}
	if md := (controllerResults{}).markdown(); strings.Contains(md, "Stopped before") {
		t.Errorf("the tables of a whole run say it was interrupted:\n%s", md)
	}
}

// TestCRDFiles: --crd names a file, or a directory whose every .yaml file is a CRD; the
// controller's own directory holds both of its kinds.
func TestCRDFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b.yaml", "a.yaml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := crdFiles(dir)
	if diff := cmp.Diff([]string{filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")}, got); diff != "" || err != nil {
		t.Errorf("crdFiles(dir) %v (-want +got):\n%s", err, diff)
	}
	if got, err := crdFiles(filepath.Join(dir, "b.yaml")); err != nil || len(got) != 1 || got[0] != filepath.Join(dir, "b.yaml") {
		t.Errorf("crdFiles(file) = %v, %v", got, err)
	}
	if _, err := crdFiles(t.TempDir()); err == nil {
		t.Error("crdFiles of a directory without .yaml: no error")
	}
	cfg, err := parseControllerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err = crdFiles(filepath.Join("..", cfg.crd))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range got {
		names = append(names, filepath.Base(f))
	}
	if diff := cmp.Diff([]string{"berth.dev_releases.yaml", "berth.dev_rollouts.yaml"}, names); diff != "" {
		t.Errorf("the default --crd's files (-want +got):\n%s", diff)
	}
}
