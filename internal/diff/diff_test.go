package diff

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func obj(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func byID(objs ...*unstructured.Unstructured) map[resource.Identity]*unstructured.Unstructured {
	out := map[resource.Identity]*unstructured.Unstructured{}
	for _, o := range objs {
		out[resource.IdentityOf(o)] = o
	}
	return out
}

// records returns the records of a preview's objects: those it would apply (desired), as they
// are live and as their dry run returned them (applied), and those it adopts.
func records(desired []*unstructured.Unstructured, live, applied map[resource.Identity]*unstructured.Unstructured, adopted ...resource.Identity) plan.Objects {
	var out plan.Objects
	for _, obj := range desired {
		out.Desire(obj, false)
	}
	out.Survey(live, applied)
	for _, id := range adopted {
		out.At(id).Adopted = true
	}
	return out
}

// upgradePreview is an upgrade that changes a Deployment (a value and a hand edit), creates a
// ConfigMap, changes a Secret, leaves a Service alone, adopts it from Helm, creates a custom
// resource of a kind not served yet, deletes a ConfigMap and keeps another.
func upgradePreview(t *testing.T) *lifecycle.Preview {
	liveDeploy := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  uid: 1234
  resourceVersion: "42"
  generation: 3
  creationTimestamp: "2026-01-01T00:00:00Z"
  managedFields: [{manager: berth, operation: Apply}]
  labels: {app: web}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
status: {replicas: 5}
`)
	appliedDeploy := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  uid: 1234
  resourceVersion: "43"
  generation: 4
  creationTimestamp: "2026-01-01T00:00:00Z"
  managedFields: [{manager: berth, operation: Apply}]
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        imagePullPolicy: IfNotPresent
        terminationMessagePath: /dev/termination-log
status: {replicas: 5}
`)
	cm := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: demo, uid: 9}, data: {mode: fast}}`)
	liveSecret := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: demo}, type: Opaque, data: {password: b2xk, user: YWRtaW4=, gone: eA==}}`)
	appliedSecret := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: demo}, type: Opaque, data: {password: bmV3, user: YWRtaW4=, token: dA==}}`)
	svc := obj(t, `{apiVersion: v1, kind: Service, metadata: {name: web, namespace: demo, resourceVersion: "7"}, spec: {ports: [{port: 80}]}}`)
	widget := obj(t, `{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, namespace: demo}, spec: {size: 3}}`)
	oldCM := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: old, namespace: demo}, data: {a: b}}`)
	id := resource.IdentityOf
	hook := obj(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: migrate, namespace: demo}}`)
	return &lifecycle.Preview{
		Operation:  release.OpUpgrade,
		Release:    &release.Release{Name: "demo", Namespace: "demo", Version: 3},
		Superseded: []int{2},
		Plan: &plan.Plan{Steps: []plan.Step{
			{ID: "apply/ConfigMap", Action: plan.Apply, Objects: []resource.Identity{id(cm)}},
			{ID: "apply/Secret", Action: plan.Apply, Objects: []resource.Identity{id(appliedSecret)}},
			{ID: "apply/Service", Action: plan.Apply, Objects: []resource.Identity{id(svc)}},
			{ID: "apply/Deployment.apps", Action: plan.Apply, Objects: []resource.Identity{id(appliedDeploy)}},
			{ID: "apply/other-kinds", Action: plan.Apply, Objects: []resource.Identity{id(widget)}},
			{ID: "delete/ConfigMap", Action: plan.Delete, Objects: []resource.Identity{id(oldCM)}},
			{ID: "wait-absent", Action: plan.WaitAbsent, Objects: []resource.Identity{id(oldCM)}},
		}, Kept: []resource.Identity{{Kind: "PersistentVolumeClaim", Namespace: "demo", Name: "data"}}},
		Objects: records([]*unstructured.Unstructured{cm, appliedSecret, svc, appliedDeploy, widget},
			byID(liveDeploy, liveSecret, svc, oldCM), byID(cm, appliedSecret, svc, appliedDeploy), id(svc)),
		Hooks: []lifecycle.PreviewHook{
			{Event: resource.HookPreUpgrade, Hook: resource.Hook{Identity: id(hook), Weight: -5, DeletePolicies: []resource.DeletePolicy{resource.BeforeHookCreation, resource.HookSucceeded}}},
		},
	}
}

func uninstallPreview(t *testing.T) *lifecycle.Preview {
	cm := obj(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: demo, uid: 9}, data: {mode: fast}}`)
	secret := obj(t, `{apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: demo}, data: {password: b2xk}}`)
	hook := obj(t, `{apiVersion: batch/v1, kind: Job, metadata: {name: cleanup, namespace: demo}}`)
	id := resource.IdentityOf
	return &lifecycle.Preview{
		Operation: release.OpUninstall,
		Release:   &release.Release{Name: "demo", Namespace: "demo", Version: 4},
		Plan: &plan.Plan{Steps: []plan.Step{
			{ID: "delete/Secret", Action: plan.Delete, Objects: []resource.Identity{id(secret)}},
			{ID: "delete/ConfigMap", Action: plan.Delete, Objects: []resource.Identity{id(cm)}},
		}},
		Objects: records(nil, byID(cm, secret), nil),
		Hooks: []lifecycle.PreviewHook{
			{Event: resource.HookPreDelete, Hook: resource.Hook{Identity: id(hook), DeletePolicies: []resource.DeletePolicy{resource.HookSucceeded}}},
		},
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		preview func(*testing.T) *lifecycle.Preview
		opts    Options
		color   bool
	}{
		{name: "upgrade", preview: upgradePreview, opts: DefaultOptions()},
		{name: "upgrade-color", preview: upgradePreview, opts: DefaultOptions(), color: true},
		{name: "upgrade-secrets-context1", preview: upgradePreview, opts: Options{ShowSecrets: true, Context: 1}},
		{name: "uninstall", preview: uninstallPreview, opts: DefaultOptions()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Compute(tt.preview(t), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".txt", r.Text(tt.color))
			js, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".json", string(js)+"\n")
		})
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name       string
		preview    func(*testing.T) *lifecycle.Preview
		want       Summary
		hasChanges bool
	}{
		{name: "upgrade", preview: upgradePreview, want: Summary{Created: 2, Configured: 2, Deleted: 1, Unchanged: 1, Kept: 1, Adopted: 1}, hasChanges: true},
		{name: "uninstall", preview: uninstallPreview, want: Summary{Deleted: 2}, hasChanges: true},
		{name: "nothing", preview: func(*testing.T) *lifecycle.Preview {
			return &lifecycle.Preview{Operation: release.OpUpgrade, Plan: &plan.Plan{}}
		}, want: Summary{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Compute(tt.preview(t), DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			if r.HasChanges() != tt.hasChanges {
				t.Errorf("HasChanges() = %v, want %v", r.HasChanges(), tt.hasChanges)
			}
		})
	}
}
