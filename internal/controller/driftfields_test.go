package controller

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/resource"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestCovers(t *testing.T) {
	live := `{spec: {replicas: 3, template: {spec: {containers: [{name: a, image: x, ports: [{containerPort: 80, protocol: TCP}]}]}}}, data: {k: v}}`
	tests := []struct {
		name, want string
		covered    bool
	}{
		{"same fields", `{spec: {replicas: 3}}`, true},
		{"defaults live", `{spec: {template: {spec: {containers: [{name: a, ports: [{containerPort: 80}]}]}}}}`, true},
		{"other value", `{spec: {replicas: 2}}`, false},
		{"field missing live", `{data: {k: v, j: w}}`, false},
		{"item missing live", `{spec: {template: {spec: {containers: [{name: a}, {name: b}]}}}}`, false},
		{"null asks nothing", `{spec: {paused: null}}`, true},
		{"number as a string", `{spec: {replicas: "3"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Live values as the API server gives them: whole numbers are int64.
			have := obj(t, live)
			have["spec"].(map[string]any)["replicas"] = int64(3)
			if got := covers(obj(t, tt.want), have); got != tt.covered {
				t.Errorf("covers = %v, want %v", got, tt.covered)
			}
		})
	}
}

func TestDiffPaths(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       []string
	}{
		{"equal", `{a: 1, b: [x]}`, `{a: 1, b: [x]}`, nil},
		{"scalar", `{spec: {replicas: 1}}`, `{spec: {replicas: 3}}`, []string{"/spec/replicas"}},
		{"key in one only", `{metadata: {labels: {app: web, tier: a}}}`, `{metadata: {labels: {app: web}}}`, []string{"/metadata/labels/tier"}},
		{"list item", `{l: [{n: a, v: 1}, {n: b, v: 2}]}`, `{l: [{n: a, v: 1}, {n: b, v: 5}]}`, []string{"/l/1/v"}},
		{"list length", `{l: [a]}`, `{l: [a, b]}`, []string{"/l"}},
		{"escaped", `{metadata: {labels: {"app.kubernetes.io/name": a}}}`, `{metadata: {labels: {"app.kubernetes.io/name": b}}}`, []string{"/metadata/labels/app.kubernetes.io~1name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, diffPaths(obj(t, tt.a), obj(t, tt.b), nil, nil)); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestOverlay(t *testing.T) {
	tests := []struct {
		name, dst, src, path, want string
	}{
		{"live value taken", `{spec: {replicas: 1, x: 1}}`, `{spec: {replicas: 5}}`, "/spec/replicas", `{spec: {replicas: 5, x: 1}}`},
		{"absent live: dropped", `{data: {a: "1", b: "2"}}`, `{data: {b: "2"}}`, "/data/a", `{data: {b: "2"}}`},
		{"maps made on the way", `{kind: X}`, `{metadata: {labels: {a: b}}}`, "/metadata/labels/a", `{kind: X, metadata: {labels: {a: b}}}`},
		{"in a list", `{l: [{v: 1}]}`, `{l: [{v: 2}]}`, "/l/0/v", `{l: [{v: 2}]}`},
		{"list too short", `{l: []}`, `{l: [{v: 2}]}`, "/l/0/v", `{l: []}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens, ok := pointerTokens(tt.path)
			if !ok {
				t.Fatalf("pointer %q", tt.path)
			}
			dst := obj(t, tt.dst)
			overlay(dst, obj(t, tt.src), tokens)
			if diff := cmp.Diff(obj(t, tt.want), dst); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestDriftRulesApplyByKindAndName(t *testing.T) {
	rules := driftRules{Ignore: []ignoreRule{
		{Paths: [][]string{{"a"}}},
		{Kind: "Deployment", Paths: [][]string{{"b"}}},
		{Kind: "ConfigMap", Name: "web", Paths: [][]string{{"c"}}},
	}}
	tests := []struct {
		id   resource.Identity
		want [][]string
	}{
		{resource.Identity{Group: "apps", Kind: "Deployment", Name: "web"}, [][]string{{"a"}, {"b"}}},
		{resource.Identity{Kind: "ConfigMap", Name: "web"}, [][]string{{"a"}, {"c"}}},
		{resource.Identity{Kind: "ConfigMap", Name: "other"}, [][]string{{"a"}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, rules.ignored(tt.id)); diff != "" {
			t.Errorf("%s: %s", tt.id, diff)
		}
	}
}

func TestDriftMessageIsBounded(t *testing.T) {
	var found []drifted
	for i := range 30 {
		found = append(found, drifted{
			ID:     resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: strings.Repeat("n", 200) + string(rune('a'+i%26))},
			Fields: []string{"/data/a", "/data/b", "/data/c", "/data/d", "/data/e", "/data/f", "/data/g"},
		})
	}
	found[0].Missing = true
	msg := driftMessage(found)
	if len(msg) > maxDriftMessage {
		t.Errorf("message of %d bytes", len(msg))
	}
	if !strings.Contains(msg, "is missing") || !strings.Contains(msg, "and 2 more") {
		t.Errorf("message does not name what is missing and count the fields left out: %s", msg)
	}
	short := driftMessage(found[1:3])
	if !strings.Contains(short, "ConfigMap/ns/") || strings.Contains(short, "more object") {
		t.Errorf("short message: %s", short)
	}
}
