package controller_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseStatusCountsTheLastChanges installs a chart of two ConfigMaps, one of them with the
// replicas value, then upgrades it with another value: status.lastChanges counts what each
// operation did to the objects, both created, then one configured and one unchanged.
func TestReleaseStatusCountsTheLastChanges(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"values.yaml": "replicas: 1\n",
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {replicas: "{{ .Values.replicas }}"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-static}
data: {greeting: hello}
`,
	})
	env.Apply(t, smallestReleaseYAML(env.Namespace, releasetest.ServeCharts(t, chart), "deployer"))

	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if diff := cmp.Diff(&v1alpha1.ChangeCounts{Created: 2}, got.Status.LastChanges); diff != "" {
		t.Errorf("status.lastChanges after the install (-want +got):\n%s", diff)
	}

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "is upgraded", readyAt(2))
	if diff := cmp.Diff(&v1alpha1.ChangeCounts{Configured: 1, Unchanged: 1}, got.Status.LastChanges); diff != "" {
		t.Errorf("status.lastChanges after the upgrade (-want +got):\n%s", diff)
	}
}
