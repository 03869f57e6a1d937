package main

import (
	"strings"
	"testing"
)

func TestSummarizeWindowCountsWhatTheWindowAdds(t *testing.T) {
	samples := []windowSample{
		// The warm-up is not counted.
		{Case: "small", Kind: upgradeWindow, Round: 0, Seconds: 99, APIRequests: 999, Requests: map[string]int{"get secrets": 900}},
		{Case: "small", Kind: upgradePlain, Round: 1, Seconds: 1.0, APIRequests: 10, Requests: map[string]int{"patch deployments": 10}},
		{Case: "small", Kind: upgradeWindow, Round: 1, Seconds: 6.0, APIRequests: 14,
			Requests: map[string]int{"patch deployments": 10, "list pods": 1, "watch pods": 1, "list deployments": 1, "watch deployments": 1}},
		{Case: "small", Kind: upgradeBaseline, Round: 1, Seconds: 2.0, APIRequests: 10, Requests: map[string]int{"patch deployments": 10}},
		{Case: "small", Kind: upgradePlain, Round: 2, Seconds: 1.0, APIRequests: 11, Requests: map[string]int{"patch deployments": 10, "get leases": 1}},
		{Case: "small", Kind: upgradeWindow, Round: 2, Seconds: 6.0, APIRequests: 14,
			Requests: map[string]int{"patch deployments": 10, "list pods": 1, "watch pods": 1, "list deployments": 1, "watch deployments": 1}},
		{Case: "small", Kind: upgradeBaseline, Round: 2, Seconds: 1.0, APIRequests: 10, Requests: map[string]int{"patch deployments": 10}},
	}
	c := summarizeWindow("small", 10, samples)
	want := map[string]float64{"list pods": 1, "watch pods": 1, "list deployments": 1, "watch deployments": 1,
		// made by one of the two upgrades without a window: its median is a half
		"get leases": -0.5}
	if len(c.Added) != len(want) {
		t.Fatalf("added = %v, want %v", c.Added, want)
	}
	for k, v := range want {
		if c.Added[k] != v {
			t.Errorf("added[%q] = %v, want %v", k, c.Added[k], v)
		}
	}
	if got := c.PlainOverBaseline; got.N != 2 || got.Min != 0.5 || got.Max != 1 {
		t.Errorf("plain over baseline = %+v, want 0.5 and 1", got)
	}
	if got := c.Seconds[upgradeWindow].Median; got != 6 {
		t.Errorf("window median = %v, want 6", got)
	}
	md := windowResults{Cases: []windowCase{c}, Rounds: 2, Window: "5s"}.markdown()
	if !strings.Contains(md, "list pods +1") || !strings.Contains(md, "small 0.75x") {
		t.Errorf("markdown misses the added requests or the ratio:\n%s", md)
	}
}

func TestWindowFlags(t *testing.T) {
	for _, args := range [][]string{{"--rounds", "0"}, {"--window", "0s"}, {"--cases", "nope"}, {"extra"}} {
		if _, err := parseWindowFlags(args); err == nil {
			t.Errorf("parseWindowFlags(%q) accepted", args)
		}
	}
	cfg, err := parseWindowFlags([]string{"--cases", "small"})
	if err != nil || len(cfg.cases) != 1 || cfg.window.String() != "5s" {
		t.Errorf("parseWindowFlags: %+v, %v", cfg, err)
	}
}
