package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/kube"
)

func TestRoundOrderRotates(t *testing.T) {
	tools := []string{"berth", "helm", "helm-qps", "floor"}
	want := [][]string{
		{"berth", "helm", "helm-qps", "floor"},
		{"helm", "helm-qps", "floor", "berth"},
		{"helm-qps", "floor", "berth", "helm"},
		{"floor", "berth", "helm", "helm-qps"},
		{"berth", "helm", "helm-qps", "floor"},
		{"helm", "helm-qps", "floor", "berth"},
	}
	if diff := cmp.Diff(want, roundOrders(tools, 5)); diff != "" {
		t.Errorf("roundOrders (-want +got):\n%s", diff)
	}
	// Over any len(tools) consecutive rounds, each tool runs once in each place.
	for start := 0; start < 3; start++ {
		places := map[string][]int{}
		for round := start; round < start+len(tools); round++ {
			for i, tool := range roundOrder(tools, round) {
				places[tool] = append(places[tool], i)
			}
		}
		for _, tool := range tools {
			got := slices.Sorted(slices.Values(places[tool]))
			if diff := cmp.Diff([]int{0, 1, 2, 3}, got); diff != "" {
				t.Errorf("rounds %d to %d: places of %s (-want +got):\n%s", start, start+len(tools)-1, tool, diff)
			}
		}
	}
	roundOrder(tools, 2)[0] = "changed"
	if !slices.Equal(tools, []string{"berth", "helm", "helm-qps", "floor"}) {
		t.Errorf("roundOrder changed or shares its input: %v", tools)
	}
}

func TestOrderText(t *testing.T) {
	got := orderText(roundOrders([]string{"berth", helmAtBerthLimits, "floor"}, 1))
	fast := fmt.Sprintf("helm (qps %d, burst %d)", kube.DefaultQPS, kube.DefaultBurst)
	want := "the tools' order rotated each round (warm-up: berth, " + fast + ", floor; round 1: " + fast + ", floor, berth)"
	if got != want {
		t.Errorf("orderText = %q, want %q", got, want)
	}
}

func TestCommandHelmAtBerthLimits(t *testing.T) {
	h := &harness{cfg: config{berth: "/bin/berth", helm: "/bin/helm"}}
	c := &benchCase{Name: "small", path: "/charts/small", Hooks: true}
	for _, op := range ops {
		def := h.command("helm", op, c, "ns")
		fast := h.command(helmAtBerthLimits, op, c, "ns")
		if want := append(slices.Clone(def), "--qps", strconv.Itoa(kube.DefaultQPS), "--burst-limit", strconv.Itoa(kube.DefaultBurst)); !slices.Equal(fast, want) {
			t.Errorf("%s: helm at berth's limits runs %q, want %q", op, fast, want)
		}
		if slices.Contains(def, "--qps") || slices.Contains(def, "--burst-limit") {
			t.Errorf("%s: helm at its defaults runs %q", op, def)
		}
		if berth := h.command("berth", op, c, "ns"); berth[0] != "/bin/berth" || strings.Join(berth[1:], " ") != strings.Join(def[1:], " ") {
			t.Errorf("%s: berth runs %q, want helm's flags %q", op, berth, def[1:])
		}
	}
	if !userAgentOf(helmAtBerthLimits)("Helm/4.3.1") || userAgentOf(helmAtBerthLimits)("berth") {
		t.Error("the requests of helm at berth's limits are not told apart by Helm's User-Agent")
	}
}
