package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestControllerChartFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{nil, "app", ""},
		{[]string{"--chart", "app"}, "app", ""},
		{[]string{"--chart", "large-record"}, "large-record", ""},
		{[]string{"--chart=huge-record"}, "", `--chart: want one of app, large-record, got "huge-record"`},
		{[]string{"--chart", ""}, "", `--chart: want one of app, large-record, got ""`},
	}
	for _, tt := range tests {
		cfg, err := parseControllerFlags(tt.args)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || cfg.chart != tt.want {
			t.Errorf("%q: chart %q, %v; want %q", tt.args, cfg.chart, err, tt.want)
		}
	}
}

// TestControllerChartKinds: the objects by kind that the goals are derived from are what each
// chart renders.
func TestControllerChartKinds(t *testing.T) {
	t.Parallel()
	for _, name := range controllerChartNames() {
		spec, err := controllerChartSpec(name)
		if err != nil {
			t.Fatal(err)
		}
		want, err := controllerChartKinds(name)
		if err != nil {
			t.Fatal(err)
		}
		r := render(t, spec, 1, true)
		if diff := cmp.Diff(want, kinds(r.Resources)); diff != "" {
			t.Errorf("%s: objects by kind (-stated +rendered):\n%s", name, diff)
		}
		if spec.Name != name {
			t.Errorf("--chart %s serves the chart %s", name, spec.Name)
		}
	}
	if _, err := controllerChartSpec("huge-record"); err == nil {
		t.Error("controllerChartSpec(huge-record): no error")
	}
	if _, err := controllerChartKinds("huge-record"); err == nil {
		t.Error("controllerChartKinds(huge-record): no error")
	}
}

func TestRequestsGoal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kinds   map[string]int
		objects int
		goal    int
	}{
		// A dry run and an apply of each object, and one watch for the Deployment.
		{"app", map[string]int{"ConfigMap": 1, "Service": 1, "Deployment": 1}, 7, 20},
		// 73 objects: 146, and one watch for the three Deployments of one namespace.
		{"large-record", map[string]int{"ServiceAccount": 3, "Service": 3, "Deployment": 3, "ConfigMap": 64}, 147, 160},
		{"ConfigMaps alone", map[string]int{"ConfigMap": 10}, 20, 33},
		{"a kind of none", map[string]int{"Deployment": 0, "ConfigMap": 1}, 2, 15},
	}
	for _, tt := range tests {
		if got := objectRequests(tt.kinds); got != tt.objects {
			t.Errorf("%s: objectRequests = %d, want %d", tt.name, got, tt.objects)
		}
		if got, err := requestsGoal(tt.kinds); err != nil || got != tt.goal {
			t.Errorf("%s: requestsGoal = %d, %v; want %d", tt.name, got, err, tt.goal)
		}
	}
	for _, name := range controllerChartNames() {
		k, err := controllerChartKinds(name)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := requestsGoal(k); name == "app" && got != goalRequestsPerRelease {
			t.Errorf("app's requests goal %d, want %d", got, goalRequestsPerRelease)
		}
	}
}

func TestLargeRecordGoals(t *testing.T) {
	t.Parallel()
	runs := []controllerRun{
		{Releases: 10, ControllerQPS: 20, ReadySeconds: 30, Requests: 1550, PeakRSSReadyBytes: 150 << 20, PeakRSSBytes: 160 << 20, SteadySeconds: 30},
		{Releases: 30, ControllerQPS: 20, ReadySeconds: 90, Requests: 4830, PeakRSSReadyBytes: 210 << 20, PeakRSSBytes: 220 << 20, SteadySeconds: 30},
		{Releases: 100, ControllerQPS: 20, Error: "not Ready"},
	}
	const requests = "at most 160 API requests a Release until Ready (app's 20, less 7 for its objects, plus 147 for large-record's)"
	const peak = "controller peak memory at most 200 MiB (app's bound at 1000 Releases)"
	want := []controllerGoal{
		{Goal: requests + " with 10 Releases of large-record (cluster's rate limit 20/s)", Measured: "155.0 (1550)", Met: "yes"},
		{Goal: peak + " with 10 Releases of large-record (cluster's rate limit 20/s)", Measured: "160 MiB", Met: "yes"},
		{Goal: requests + " with 30 Releases of large-record (cluster's rate limit 20/s)", Measured: "161.0 (4830)", Met: "no"},
		{Goal: peak + " with 30 Releases of large-record (cluster's rate limit 20/s)", Measured: "220 MiB", Met: "no"},
		{Goal: requests + " with 100 Releases of large-record (cluster's rate limit 20/s)", Measured: "failed", Met: "no"},
		{Goal: peak + " with 100 Releases of large-record (cluster's rate limit 20/s)", Measured: "failed", Met: "no"},
	}
	got := controllerGoals("large-record", runs)
	if diff := cmp.Diff(want, got[:len(want)]); diff != "" {
		t.Errorf("goals (-want +got):\n%s", diff)
	}
	// Then the steady state's, as for app; none of app's goals of 1000 Releases.
	if len(got) != len(want)+2 || got[len(want)].Goal != "no writes in the steady state after every Release is Ready" ||
		got[len(want)+1].Goal != "no chart or index downloads in the steady state" {
		t.Errorf("goals after the chart's: %+v", got[len(want):])
	}
	for _, g := range got {
		if strings.Contains(g.Goal, "Ready in at most") {
			t.Errorf("a goal of app's for large-record: %q", g.Goal)
		}
	}
	if got := controllerGoals("large-record", nil); got[0].Met != "–" || got[0].Measured != "not run" {
		t.Errorf("goals without a run: %+v", got[0])
	}
}

// TestControllerResultsNameTheChart: the heading line and the JSON say which chart ran; results
// written before --chart existed ran app.
func TestControllerResultsNameTheChart(t *testing.T) {
	t.Parallel()
	run := controllerRun{Releases: 10, ControllerQPS: 20, ReadySeconds: 30, Requests: 1550, SteadySeconds: 30}
	large := controllerResults{Chart: "large-record", Runs: []controllerRun{run}}
	md := large.markdown()
	heading, _, _ := strings.Cut(md, "\n")
	if !strings.Contains(heading, "Every Release releases the chart `large-record` (73 objects).") {
		t.Errorf("heading does not name the chart: %q", heading)
	}
	if strings.Contains(md, fluxAnchor) {
		t.Error("the app chart's published figure beside large-record's")
	}
	if !strings.Contains(md, "| at most 160 API requests a Release until Ready") {
		t.Errorf("no requests goal:\n%s", md)
	}
	data, err := json.Marshal(large)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"chart":"large-record"`) {
		t.Errorf("JSON does not name the chart: %s", data)
	}
	old, err := parseControllerResults([]byte(`{"runs": [{"releases": 10}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if old.chart() != "app" || !strings.Contains(old.markdown(), "Every Release releases the chart `app` (3 objects).") {
		t.Errorf("results without a chart: chart %q", old.chart())
	}
	if !strings.Contains(plotSubtitle(large), "chart large-record") {
		t.Errorf("plot subtitle does not name the chart: %q", plotSubtitle(large))
	}
}

func TestReleaseObjectChart(t *testing.T) {
	t.Parallel()
	obj := releaseObject("tenant-0000", "http://x", releaseOptions{chart: "large-record"})
	got, _ := obj.Object["spec"].(map[string]any)["chart"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"repository": "http://x", "name": "large-record", "version": "1.0.0"}, got); diff != "" {
		t.Errorf("spec.chart (-want +got):\n%s", diff)
	}
	if obj.GetName() != "app" {
		t.Errorf("Release named %q, want app whatever the chart", obj.GetName())
	}
}
