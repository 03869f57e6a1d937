package cluster_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
	"github.com/berthdev/berth/internal/resource"
)

// TestDryRunOfAnUnchangedObjectEqualsLiveObject applies objects (nine ConfigMaps, listed; a
// Service the API server fills in; a ServiceAccount) and reads them with LiveObjects: a dry run
// of the same apply returns each live object exactly, while a dry run of a changed object, or of
// the same object after another manager changed a field berth sets, differs from it.
func TestDryRunOfAnUnchangedObjectEqualsLiveObject(t *testing.T) {
	env, c := setup(t)
	ctx := deadline(t)
	var objs []*unstructured.Unstructured
	for i := range 9 {
		objs = append(objs, object(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%d, namespace: %s}, data: {k: "v%d"}}`, i, env.Namespace, i)))
	}
	objs = append(objs,
		object(t, fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: svc, namespace: %s}, spec: {selector: {app: web}, ports: [{port: 80}]}}`, env.Namespace)),
		object(t, fmt.Sprintf(`{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa, namespace: %s, labels: {a: b}}}`, env.Namespace)),
	)
	for _, obj := range objs {
		if _, err := c.Apply(ctx, obj, cluster.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	missing := object(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: missing, namespace: %s}}`, env.Namespace))
	live, err := c.LiveObjects(ctx, append(objs, missing))
	if err != nil {
		t.Fatalf("LiveObjects: %v", err)
	}
	if len(live) != len(objs) {
		t.Errorf("LiveObjects found %d objects, want %d", len(live), len(objs))
	}
	dryRun := func(obj *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		out, err := c.Apply(ctx, obj, cluster.ApplyOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, obj := range objs {
		id := resource.IdentityOf(obj)
		l := live[id]
		if l == nil {
			t.Errorf("%s: not found", id)
			continue
		}
		if _, ok := l.Object["spec"]; id.Kind == "Service" && !ok {
			t.Errorf("%s: read without its spec: %v", id, l.Object)
		}
		if got := dryRun(obj); !equality.Semantic.DeepEqual(got, l) {
			t.Errorf("%s: the dry run of an unchanged apply differs from the live object:\ndry run: %v\nlive:    %v", id, got, l)
		}
	}

	changed := objs[0].DeepCopy()
	changed.Object["data"] = map[string]any{"k": "changed"}
	if got := dryRun(changed); equality.Semantic.DeepEqual(got, live[resource.IdentityOf(changed)]) {
		t.Errorf("the dry run of a changed ConfigMap equals the live object")
	}

	// Another manager changes a field berth sets, as kubectl edit would.
	edited := live[resource.IdentityOf(objs[1])].DeepCopy()
	edited.Object["data"] = map[string]any{"k": "by hand"}
	if _, err := env.Resource(t, "v1", "ConfigMap").Update(ctx, edited, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	now, err := c.LiveObjects(ctx, objs[1:2])
	if err != nil {
		t.Fatal(err)
	}
	if got := dryRun(objs[1]); equality.Semantic.DeepEqual(got, now[resource.IdentityOf(objs[1])]) {
		t.Errorf("the dry run of a ConfigMap edited by hand equals the live object: %v", got)
	}
}
