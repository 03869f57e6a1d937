package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
)

func objs(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	out, err := resource.ParseManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const chart = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: ns}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: shirts.stable.example.com}
---
apiVersion: stable.example.com/v1
kind: Shirt
metadata: {name: s, namespace: ns}
---
apiVersion: beta.example.com/v1
kind: Shirt
metadata: {name: s, namespace: ns}
`

func ids(steps []Step) []string {
	var out []string
	for _, s := range steps {
		var names []string
		for _, id := range s.Objects {
			names = append(names, id.String())
		}
		out = append(out, s.ID+": "+strings.Join(names, ", "))
	}
	return out
}

func TestBuildInstall(t *testing.T) {
	p, err := Build(Input{Desired: objs(t, chart), Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// ConfigMaps, CRDs and Services depend on none of each other: one stage.
		"apply/ConfigMap+CustomResourceDefinition.apiextensions.k8s.io+Service: ConfigMap/ns/settings, ConfigMap/ns/other, CustomResourceDefinition.apiextensions.k8s.io/shirts.stable.example.com, Service/ns/web",
		"wait-ready/CustomResourceDefinition.apiextensions.k8s.io: CustomResourceDefinition.apiextensions.k8s.io/shirts.stable.example.com",
		"apply/Deployment.apps: Deployment.apps/ns/web",
		"apply/other-kinds: Shirt.stable.example.com/ns/s, Shirt.beta.example.com/ns/s",
		"wait-ready: ConfigMap/ns/settings, ConfigMap/ns/other, CustomResourceDefinition.apiextensions.k8s.io/shirts.stable.example.com, Service/ns/web, Deployment.apps/ns/web, Shirt.stable.example.com/ns/s, Shirt.beta.example.com/ns/s",
	}
	if diff := cmp.Diff(want, ids(p.Steps)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

func TestBuildUpgradeDeletesExactlyWhatLeft(t *testing.T) {
	recorded := objs(t, chart)
	desired := objs(t, chart)
	// The beta Shirt leaves the chart; its stable namesake stays.
	desired = desired[:len(desired)-1]
	p, err := Build(Input{Desired: desired, Recorded: recorded, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	var removals []string
	for _, line := range ids(p.Steps) {
		if strings.HasPrefix(line, "delete") || strings.HasPrefix(line, "wait-absent") {
			removals = append(removals, line)
		}
	}
	want := []string{"delete/Shirt.beta.example.com: Shirt.beta.example.com/ns/s", "wait-absent: Shirt.beta.example.com/ns/s"}
	if diff := cmp.Diff(want, removals); diff != "" {
		t.Errorf("removals (-want +got):\n%s", diff)
	}
}

func TestBuildKeepsKeptObjects(t *testing.T) {
	recorded := objs(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, namespace: ns, annotations: {helm.sh/resource-policy: keep}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: live-kept, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: dropped, namespace: ns}
`)
	live := objs(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: live-kept, namespace: ns, annotations: {helm.sh/resource-policy: keep}}}`)[0]
	p, err := Build(Input{Recorded: recorded, Live: map[resource.Identity]*unstructured.Unstructured{resource.IdentityOf(live): live}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"delete/ConfigMap: ConfigMap/ns/dropped"}, ids(p.Steps)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	wantKept := []resource.Identity{{Kind: "ConfigMap", Namespace: "ns", Name: "kept"}, {Kind: "ConfigMap", Namespace: "ns", Name: "live-kept"}}
	if diff := cmp.Diff(wantKept, p.Kept); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestBuildRejectsDuplicates(t *testing.T) {
	_, err := Build(Input{Desired: objs(t, chart+"---\n{apiVersion: v1, kind: Service, metadata: {name: web, namespace: ns}}")})
	if err == nil || !strings.Contains(err.Error(), "Service/ns/web: defined twice") {
		t.Errorf("error %v, want the duplicate named", err)
	}
}

// TestDeletionsCarryTheObservedUIDs: the delete and wait-absent steps carry the UID each object
// had when the plan was built, so that a plan run later (resumed from its journal, say) deletes
// and waits for those objects only; an object not observed has none.
func TestDeletionsCarryTheObservedUIDs(t *testing.T) {
	recorded := objs(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: old, namespace: ns}
---
apiVersion: v1
kind: Secret
metadata: {name: gone-already, namespace: ns}
`)
	live := recorded[0].DeepCopy()
	live.SetUID("uid-old")
	p, err := Build(Input{Recorded: recorded, Live: map[resource.Identity]*unstructured.Unstructured{resource.IdentityOf(live): live}, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	old, gone := resource.IdentityOf(recorded[0]), resource.IdentityOf(recorded[1])
	var checked int
	for _, s := range p.Steps {
		if s.Action != Delete && s.Action != WaitAbsent {
			continue
		}
		checked++
		if len(s.UIDs) != len(s.Objects) {
			t.Errorf("step %s: %d UIDs for %d objects", s.ID, len(s.UIDs), len(s.Objects))
		}
		for _, id := range s.Objects {
			want := map[resource.Identity]string{old: "uid-old", gone: ""}[id]
			if got := string(s.UID(id)); got != want {
				t.Errorf("step %s: UID of %s is %q, want %q", s.ID, id, got, want)
			}
		}
	}
	if checked != 2 {
		t.Errorf("checked %d delete and wait-absent steps, want 2 (delete the ConfigMap and the Secret, together; wait-absent):\n%s", checked, p)
	}
	// The UIDs travel with the plan, as a journal keeps it.
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(p, &back); diff != "" {
		t.Errorf("plan after a JSON round trip (-before +after):\n%s", diff)
	}
}

func TestWindowLeft(t *testing.T) {
	w := Window{For: 10 * time.Minute}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		started time.Time
		want    time.Duration
	}{
		{"not started", time.Time{}, 10 * time.Minute},
		{"just started", now, 10 * time.Minute},
		{"half way", now.Add(-5 * time.Minute), 5 * time.Minute},
		{"over", now.Add(-time.Hour), 0},
	} {
		if got := w.Left(c.started, now); got != c.want {
			t.Errorf("%s: Left = %s, want %s", c.name, got, c.want)
		}
	}
}
