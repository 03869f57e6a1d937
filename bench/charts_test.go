package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/resource"
)

func render(t *testing.T, c chartSpec, generation int, hooks bool) *chart.Rendered {
	t.Helper()
	path, err := c.write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ch, err := chart.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := chart.Render(context.Background(), ch, map[string]any{"generation": generation, "hooks": hooks},
		chart.RenderOptions{ReleaseName: "bench", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func kinds(objs []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, obj := range objs {
		out[obj.GetKind()]++
	}
	return out
}

func TestChartsHaveTheirSize(t *testing.T) {
	tests := []struct {
		chart string
		// want counts the release's objects by kind, CRDs from crds/ included.
		want map[string]int
	}{
		{"small", map[string]int{"ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "ConfigMap": 4, "Secret": 1, "Service": 1, "Deployment": 1}},
		{"large", map[string]int{"CustomResourceDefinition": 20, "Deployment": 20, "Service": 20, "ServiceAccount": 20, "Role": 20,
			"RoleBinding": 20, "PodDisruptionBudget": 20, "NetworkPolicy": 20, "ConfigMap": 180, "Secret": 140}},
		{"large-flat", map[string]int{"ConfigMap": 440, "Deployment": 20, "Service": 20, "Secret": 20}},
		{"hooks", map[string]int{"ServiceAccount": 1, "ConfigMap": 1, "Deployment": 1}},
		{"app", map[string]int{"ConfigMap": 1, "Service": 1, "Deployment": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.chart, func(t *testing.T) {
			c, ok := chartByName(tt.chart)
			if !ok {
				t.Fatalf("no chart %q", tt.chart)
			}
			r := render(t, c, 1, true)
			got := kinds(append(r.CRDs, r.Resources...))
			for kind, n := range tt.want {
				if got[kind] != n {
					t.Errorf("%d objects of kind %s, want %d", got[kind], kind, n)
				}
			}
			if tt.chart == "large-flat" {
				// Exactly the stated kinds, 500 in all.
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("objects by kind (-want +got):\n%s", diff)
				}
				if n := len(r.CRDs) + len(r.Resources) + len(r.Hooks); n != 500 {
					t.Errorf("%d objects in all, want 500", n)
				}
				for _, obj := range r.Resources {
					if obj.GetKind() != "Deployment" {
						continue
					}
					if n, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); fmt.Sprint(n) != "2" {
						t.Errorf("Deployment %s has %v replicas, want 2", obj.GetName(), n)
					}
				}
			}
			if tt.chart == "app" {
				// One Pod a release, run as the namespace's default account, which every
				// namespace has.
				for _, obj := range r.Resources {
					if obj.GetKind() != "Deployment" {
						continue
					}
					if n, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); fmt.Sprint(n) != "1" {
						t.Errorf("Deployment %s has %v replicas, want 1", obj.GetName(), n)
					}
					if sa, found, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "serviceAccountName"); found {
						t.Errorf("Deployment %s runs as %q, want the default account", obj.GetName(), sa)
					}
				}
			}
			if len(r.Resources) != c.Objects || len(r.CRDs) != c.CRDs {
				t.Errorf("%d CRDs and %d objects, the spec says %d and %d", len(r.CRDs), len(r.Resources), c.CRDs, c.Objects)
			}
			if tt.chart == "large" {
				// 500 in all: every CRD has one custom resource of its own kind.
				for i := range c.CRDs {
					kind, _ := widgetKind(i)
					if got[kind] != 1 {
						t.Errorf("%d custom resources of kind %s, want 1", got[kind], kind)
					}
				}
				if n := len(r.CRDs) + len(r.Resources); n != 500 {
					t.Errorf("%d objects in all, want 500", n)
				}
			}
		})
	}
}

// TestPodsRunAsAccountsTheChartHas: a Pod template that names a ServiceAccount the release does
// not create is never admitted, and its Deployment never becomes ready for any tool.
func TestPodsRunAsAccountsTheChartHas(t *testing.T) {
	for _, c := range charts() {
		t.Run(c.Name, func(t *testing.T) {
			r := render(t, c, 1, true)
			objs := append(r.CRDs, r.Resources...)
			for _, h := range r.Hooks {
				objs = append(objs, h.Object)
			}
			accounts := map[string]bool{"default": true}
			for _, obj := range objs {
				if obj.GetKind() == "ServiceAccount" {
					accounts[obj.GetName()] = true
				}
			}
			for _, obj := range objs {
				path := []string{"spec", "template", "spec", "serviceAccountName"}
				if obj.GetKind() == "Pod" {
					path = []string{"spec", "serviceAccountName"}
				}
				sa, found, _ := unstructured.NestedString(obj.Object, path...)
				if found && !accounts[sa] {
					t.Errorf("%s %s runs as ServiceAccount %q, which the chart does not create", obj.GetKind(), obj.GetName(), sa)
				}
			}
		})
	}
}

func TestUpgradeChangesHalfTheObjects(t *testing.T) {
	for _, c := range charts() {
		t.Run(c.Name, func(t *testing.T) {
			before, after := render(t, c, 1, true), render(t, c, 2, true)
			byID := map[resource.Identity]*unstructured.Unstructured{}
			for _, obj := range before.Resources {
				byID[resource.IdentityOf(obj)] = obj
			}
			changed := 0
			for _, obj := range after.Resources {
				old := byID[resource.IdentityOf(obj)]
				if old == nil {
					t.Fatalf("%s appears on upgrade", resource.IdentityOf(obj))
				}
				if !equalObjects(old, obj) {
					changed++
				}
			}
			want := len(after.Resources) / 2
			if c.Name == "hooks" {
				want = 1 // its ConfigMap; the Deployment and ServiceAccount stay
			}
			if changed != want {
				t.Errorf("upgrade changes %d of %d objects, want %d", changed, len(after.Resources), want)
			}
		})
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	return string(ja) == string(jb)
}

func TestHooksChartRunsTwentyHooks(t *testing.T) {
	c, _ := chartByName("hooks")
	r := render(t, c, 1, true)
	byEvent := map[resource.HookEvent]int{}
	weights := map[int]bool{}
	for _, h := range r.Hooks {
		if h.Identity.Kind != "Job" {
			t.Errorf("hook %s is not a Job", h.Identity)
		}
		if !h.HasDeletePolicy(resource.HookSucceeded) {
			t.Errorf("hook %s is not deleted when it succeeds", h.Identity)
		}
		for _, e := range h.Events {
			byEvent[e]++
		}
		weights[h.Weight] = true
	}
	want := map[resource.HookEvent]int{resource.HookPreInstall: 5, resource.HookPostInstall: 4, resource.HookPreUpgrade: 4,
		resource.HookPostUpgrade: 4, resource.HookPreDelete: 3}
	for e, n := range want {
		if byEvent[e] != n {
			t.Errorf("%d %s hooks, want %d", byEvent[e], e, n)
		}
	}
	if len(r.Hooks) != 20 || len(weights) < 5 {
		t.Errorf("%d hooks with %d distinct weights, want 20 with mixed weights", len(r.Hooks), len(weights))
	}
	if got := c.Hooks["install"] + c.Hooks["upgrade"] + c.Hooks["uninstall"]; got != 20 {
		t.Errorf("the spec counts %d hooks, want 20", got)
	}
	if base := render(t, c, 1, false); len(base.Hooks) != 0 || len(base.Resources) != len(r.Resources) {
		t.Errorf("without hooks: %d hooks and %d objects, want none and %d", len(base.Hooks), len(base.Resources), len(r.Resources))
	}
}
