package lifecycle

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestCustomResourcesOfNewCRDsAreValidatedBeforeAnyIsApplied installs a chart whose crds/ defines
// a kind and whose templates hold a valid and an invalid object of it. The kind does not exist
// before the install, so the objects cannot be validated with the rest; berth validates them once
// the CRD is Established and applies neither.
func TestCustomResourcesOfNewCRDsAreValidatedBeforeAnyIsApplied(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	group := "late-" + berthtest.Suffix(env) + ".example.com"
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
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
              size: {type: integer}
`, group)
	t.Cleanup(func() {
		crds := env.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		crds.Delete(t.Context(), "gizmos."+group, metav1.DeleteOptions{})
	})
	gizmo := func(name, size string) string {
		return fmt.Sprintf("apiVersion: %s/v1\nkind: Gizmo\nmetadata:\n  name: %s\nspec:\n  size: %s\n", group, name, size)
	}
	chart := berthtest.WriteChart(t, "late", map[string]string{
		"crds/gizmo.yaml":       crd,
		"templates/good.yaml":   goodTemplate,
		"templates/gizmos.yaml": gizmo("fine", "3") + "---\n" + gizmo("broken", `"big"`),
	})

	_, _, err := berthtest.Berth(t, env, "install", "late", chart, "--wait")
	if err == nil {
		t.Fatal("install succeeded, want the invalid Gizmo refused")
	}
	for _, want := range []string{"validation of the custom resources failed", "Gizmo." + group + "/" + env.Namespace + "/broken", "size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	berthtest.AssertNoObject(t, env, group+"/v1", "Gizmo", "fine", "broken")
}
