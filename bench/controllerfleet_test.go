package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseFleetFlags(t *testing.T) {
	cfg, err := parseControllerFlags([]string{"--releases", "50", "--shards", "2", "--remote", "20", "--name", "controller-fleet-small", "--label", "small"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.shards != 2 || cfg.remote != 20 || cfg.name != "controller-fleet-small" || cfg.label != "small" {
		t.Errorf("got shards %d, remote %d, name %q, label %q", cfg.shards, cfg.remote, cfg.name, cfg.label)
	}
	def, err := parseControllerFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.shards != 0 || def.remote != 0 || def.name != "controller" || def.label != "" {
		t.Errorf("defaults: shards %d, remote %d, name %q, label %q", def.shards, def.remote, def.name, def.label)
	}
	for _, args := range [][]string{
		{"--shards", "-1"},
		{"--remote", "-2"},
		{"--shards", "two"},
		{"--name", ""},
		{"--name", "../controller"},
	} {
		if _, err := parseControllerFlags(args); err == nil {
			t.Errorf("parseControllerFlags(%q) accepted", args)
		}
	}
}

func TestFleetShardNamesAndCounts(t *testing.T) {
	var names []string
	for i := range 5 {
		names = append(names, shardName(i, 2))
	}
	if diff := cmp.Diff([]string{"shard1", "shard2", "shard1", "shard2", "shard1"}, names); diff != "" {
		t.Errorf("shard names (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3, 2}, shardCounts(5, 2)); diff != "" {
		t.Errorf("shardCounts(5, 2) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 1, 0}, shardCounts(2, 3)); diff != "" {
		t.Errorf("shardCounts(2, 3) (-want +got):\n%s", diff)
	}
	if got := shardSelector("shard2"); got != "sharding.berth.dev/key=shard2" {
		t.Errorf("shardSelector = %q", got)
	}
}

func TestFleetRelease(t *testing.T) {
	tests := []struct {
		name       string
		opts       releaseOptions
		i          int
		wantLabels map[string]string
		wantSpec   map[string]any
	}{
		{"shard", releaseOptions{shards: 2}, 3, map[string]string{"sharding.berth.dev/key": "shard2"}, map[string]any{
			"serviceAccountName": "deployer",
			"chart":              map[string]any{"repository": "http://x", "name": "app", "version": "1.0.0"},
		}},
		{"remote", releaseOptions{kubeConfigSecret: remoteSecret}, 0, nil, map[string]any{
			"kubeConfig": map[string]any{"secretRef": map[string]any{"name": "workload-kubeconfig"}},
			"chart":      map[string]any{"repository": "http://x", "name": "app", "version": "1.0.0"},
		}},
		{"neither", releaseOptions{}, 0, nil, map[string]any{
			"serviceAccountName": "deployer",
			"chart":              map[string]any{"repository": "http://x", "name": "app", "version": "1.0.0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := releaseObject(tenant(tt.i), "http://x", tt.opts)
			tt.opts.fleet(obj, tt.i)
			if diff := cmp.Diff(tt.wantLabels, obj.GetLabels()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSpec, obj.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFleetMarkdown(t *testing.T) {
	runs := []controllerRun{{Releases: 50, ControllerQPS: 1000, ReadySeconds: 12.5, PeakRSSReadyBytes: 80 << 20}}
	fleet := []fleetRun{
		{Kind: fleetShards, Releases: 50, ControllerQPS: 1000, CreateSeconds: 0.2, ReadySeconds: 10, LoadAverage: 2.5,
			Controllers: []fleetController{
				{Name: "shard1", Releases: 25, PeakRSSReadyBytes: 60 << 20, PeakRSSBytes: 61 << 20, CPUSecondsReady: 1},
				{Name: "shard2", Releases: 25, PeakRSSReadyBytes: 62 << 20, CPUSecondsReady: 1.2},
			},
			Requests: 2000, ChartRequests: 100, DeleteSeconds: 8, DeleteRequests: 1650, ClusterCPUSecondsReady: 20.25},
		{Kind: fleetRemote, Releases: 20, ControllerQPS: 1000, CreateSeconds: 0.1, ReadySeconds: 6, LoadAverage: 2,
			Requests: 200, RemoteRequests: 600, ChartRequests: 40, DeleteSeconds: 5, DeleteRequests: 700,
			Controllers: []fleetController{{Name: "controller", Releases: 20, PeakRSSReadyBytes: 70 << 20, PeakRSSBytes: 72 << 20, CPUSecondsReady: 0.8}}},
		{Kind: fleetShards, Releases: 3000, ControllerQPS: 20, Controllers: []fleetController{{Name: "shard1"}, {Name: "shard2"}}, Error: "Releases Ready: not after 30m0s\nmore"},
		{Kind: fleetShards, Releases: 10000, ControllerQPS: 1000, ReadySeconds: 600, Requests: 200000, DeleteSkipped: true,
			Controllers: []fleetController{{Name: "shard1", Releases: 5000, CPUSecondsReady: 100}, {Name: "shard2", Releases: 5000, CPUSecondsReady: 100}}},
	}
	md := fleetMarkdown(fleet, runs)
	for _, want := range []string{
		"| 2 shards | 50 | 1000 | 10.0 s | 12.5 s (80 MiB) | 0.2 s | shard1 (25): 60 / 61 MiB; shard2 (25): 62 / – MiB | 1.0 s, 1.2 s / 20.2 s (2.5) | 2000 (40.0) | 100 | 8.0 s (1650) |",
		"| into a workload cluster | 20 | 1000 | 6.0 s | – | 0.1 s | controller (20): 70 / 72 MiB | 0.8 s / – (2.0) | 200 + 600 (40.0) | 40 | 5.0 s (700) |",
		"| 2 shards | 3000 | 20 | failed: Releases Ready: not after 30m0s | – |",
		"| 200000 (20.0) | 0 | not measured |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("fleet markdown lacks %q:\n%s", want, md)
		}
	}
	if got := fleetMarkdown(nil, runs); got != "" {
		t.Errorf("fleet markdown without fleet runs = %q, want none", got)
	}
}

func TestControllerMarkdownLabelAndFleet(t *testing.T) {
	r := controllerResults{
		Machine: machine{CPU: "cpu", CPUs: 2}, Started: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC),
		Label: "Small verification run",
		Runs:  []controllerRun{{Releases: 50, ControllerQPS: 1000, ReadySeconds: 12.5}},
		Fleet: []fleetRun{{Kind: fleetRemote, Releases: 20, ControllerQPS: 1000, ReadySeconds: 6, Controllers: []fleetController{{Name: "controller", Releases: 20}}}},
	}
	md := r.markdown()
	if !strings.HasPrefix(md, "**Small verification run**\n\n") {
		t.Errorf("markdown does not start with the label:\n%s", md)
	}
	if !strings.Contains(md, "| into a workload cluster | 20 | 1000 | 6.0 s |") {
		t.Errorf("markdown lacks the fleet run:\n%s", md)
	}
}
