package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// shirtCRD defines Kind Shirt in a group.
const shirtCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: shirts.%[1]s
spec:
  group: %[1]s
  names: {kind: Shirt, listKind: ShirtList, plural: shirts, singular: shirt}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
`

// shirts are a Shirt named tee in each group, the beta one only while .Values.beta is set.
const shirts = `apiVersion: %[1]s/v1
kind: Shirt
metadata:
  name: tee
spec:
  color: blue
{{- if .Values.beta }}
---
apiVersion: %[2]s/v1
kind: Shirt
metadata:
  name: tee
  {{- if .Values.keepBeta }}
  annotations:
    helm.sh/resource-policy: keep
  {{- end }}
spec:
  color: red
{{- end }}
`

// TestUpgradeDeletesExactIdentity installs two Shirts of the same name in two groups and upgrades
// to a chart without the beta one: it is deleted, or left in place when kept, and the stable
// one, same name, stays the release's.
func TestUpgradeDeletesExactIdentity(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			t.Parallel()
			env := testenv.New(t)
			// CRDs are cluster-scoped and never deleted by uninstall: name their groups after the test.
			stable, beta := "stable."+berthtest.Suffix(env)+".example.com", "beta."+berthtest.Suffix(env)+".example.com"
			t.Cleanup(func() { deleteCRDs(t, env, "shirts."+stable, "shirts."+beta) })
			chart := berthtest.WriteChart(t, "wardrobe", map[string]string{
				"crds/stable.yaml":      fmt.Sprintf(shirtCRD, stable),
				"crds/beta.yaml":        fmt.Sprintf(shirtCRD, beta),
				"templates/shirts.yaml": fmt.Sprintf(shirts, stable, beta),
				"values.yaml":           "beta: true\nkeepBeta: false\n",
			})
			keepFlag := fmt.Sprintf("keepBeta=%v", keep)
			stableID := resource.Identity{Group: stable, Kind: "Shirt", Namespace: env.Namespace, Name: "tee"}
			betaID := resource.Identity{Group: beta, Kind: "Shirt", Namespace: env.Namespace, Name: "tee"}

			berthtest.MustBerth(t, env, "install", "wardrobe", chart, "--set", keepFlag, "--wait")
			installed := assertDeployed(t, env, "wardrobe")
			if installed[stableID] == nil || installed[betaID] == nil {
				t.Fatalf("release wardrobe has %v, want %s and %s", identities(slices.Collect(maps.Values(installed))), stableID, betaID)
			}

			// --wait: the upgrade returns once the objects it deleted are gone.
			berthtest.MustBerth(t, env, "upgrade", "wardrobe", chart, "--set", keepFlag, "--set", "beta=false", "--wait")
			upgraded := assertDeployed(t, env, "wardrobe")
			if len(upgraded) != 1 || upgraded[stableID] == nil {
				t.Errorf("release wardrobe has %v after the upgrade, want only %s", identities(slices.Collect(maps.Values(upgraded))), stableID)
			}
			if got := shirt(t, env, stableID); got == nil || got.GetUID() != installed[stableID].GetUID() {
				t.Errorf("%s: got %v, want it to stay with UID %s", stableID, got, installed[stableID].GetUID())
			}
			switch got := shirt(t, env, betaID); {
			case keep && (got == nil || got.GetUID() != installed[betaID].GetUID()):
				t.Errorf("%s is kept by helm.sh/resource-policy: keep; got %v, want it in place with UID %s", betaID, got, installed[betaID].GetUID())
			case !keep && got != nil:
				t.Errorf("%s left the chart and still exists (deletionTimestamp %v)", betaID, got.GetDeletionTimestamp())
			}
			assertHistory(t, env, "wardrobe",
				revision{1, "superseded", "Install complete"},
				revision{2, "deployed", "Upgrade complete"})

			// The release no longer manages the beta Shirt: uninstall leaves a kept one alone.
			// Background propagation: a Shirt has no dependents to wait for.
			berthtest.MustBerth(t, env, "uninstall", "wardrobe", "--cascade", "background")
			if got := shirt(t, env, stableID); got != nil {
				t.Errorf("%s still exists after uninstall (deletionTimestamp %v)", stableID, got.GetDeletionTimestamp())
			}
			if got := shirt(t, env, betaID); keep && (got == nil || got.GetUID() != installed[betaID].GetUID()) {
				t.Errorf("kept %s: got %v after uninstall, want it in place with UID %s", betaID, got, installed[betaID].GetUID())
			}
			berthtest.AssertNoRecords(t, env)
		})
	}
}

// shirt returns the live Shirt of an identity, or nil.
func shirt(t *testing.T, env *testenv.Env, id resource.Identity) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: id.Group, Version: "v1", Kind: id.Kind})
	obj.SetName(id.Name)
	return liveObject(t, env, obj)
}

// deleteCRDs deletes CustomResourceDefinitions by name, whether or not they exist. It runs in a
// cleanup, when the test's context is done.
func deleteCRDs(t *testing.T, env *testenv.Env, names ...string) {
	crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	for _, name := range names {
		if err := crds.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CustomResourceDefinition %s: %v", name, err)
		}
	}
}
