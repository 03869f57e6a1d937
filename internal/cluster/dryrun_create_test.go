package cluster_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/cluster"
)

// TestDryRunOfAMissingObjectHasNoResourceVersion: a server-side dry run of the apply of an object
// that does not exist answers with no resourceVersion (nothing was stored), while one of an
// object that exists answers with its resourceVersion. A survey tells from it which new objects
// exist, without reading them.
func TestDryRunOfAMissingObjectHasNoResourceVersion(t *testing.T) {
	env, c := setup(t)
	ctx := deadline(t)
	objs := []*unstructured.Unstructured{
		object(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: %s}, data: {k: v}}`, env.Namespace)),
		object(t, fmt.Sprintf(`{apiVersion: v1, kind: Service, metadata: {name: svc, namespace: %s}, spec: {selector: {app: web}, ports: [{port: 80}]}}`, env.Namespace)),
		object(t, fmt.Sprintf(`{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: %s-role}, rules: []}`, env.Namespace)),
	}
	d := object(t, deployment)
	d.SetNamespace(env.Namespace)
	objs = append(objs, d)
	t.Cleanup(func() {
		_ = env.Resource(t, "rbac.authorization.k8s.io/v1", "ClusterRole").Delete(context.Background(), env.Namespace+"-role", metav1.DeleteOptions{})
	})
	for _, obj := range objs {
		out, err := c.Apply(ctx, obj, cluster.ApplyOptions{DryRun: true})
		if err != nil {
			t.Fatalf("dry run of %s: %v", obj.GetName(), err)
		}
		if rv := out.GetResourceVersion(); rv != "" {
			t.Errorf("%s %s: the dry run of its creation answers resourceVersion %q, want none", obj.GetKind(), obj.GetName(), rv)
		}
	}
	for _, obj := range objs {
		created, err := c.Apply(ctx, obj, cluster.ApplyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Apply(ctx, obj, cluster.ApplyOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if rv := out.GetResourceVersion(); rv == "" || rv != created.GetResourceVersion() {
			t.Errorf("%s %s: the dry run of an unchanged apply answers resourceVersion %q, want %q", obj.GetKind(), obj.GetName(), rv, created.GetResourceVersion())
		}
	}
}
