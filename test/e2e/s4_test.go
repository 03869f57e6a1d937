package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

func shirtCRD(group string) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: shirts.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Shirt, plural: shirts, singular: shirt, listKind: ShirtList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`, group)
}

// shirtChart has one Shirt of each group, both named "favourite" and kept; values.beta drops the
// beta one.
var shirtChart = map[string]string{
	"crds/stable.yaml": shirtCRD("stable.example.com"),
	"crds/beta.yaml":   shirtCRD("beta.example.com"),
	"values.yaml":      "beta: true\n",
	"templates/shirts.yaml": `
apiVersion: stable.example.com/v1
kind: Shirt
metadata:
  name: favourite
  annotations: {helm.sh/resource-policy: keep}
spec: {color: blue}
{{- if .Values.beta }}
---
apiVersion: beta.example.com/v1
kind: Shirt
metadata:
  name: favourite
  annotations: {helm.sh/resource-policy: keep}
spec: {color: red}
{{- end }}
`,
}

// S4: two CRDs define Kind Shirt in two groups; one kept Shirt of each, same name. Uninstall keeps
// both; reinstall adopts each as its own (never the wrong group, never a resourceVersion error); an
// upgrade that drops one leaves it in place and stops managing exactly that one.
func TestS4KeptShirtsOfTwoGroups(t *testing.T) {
	env := testenv.New(t)
	t.Cleanup(func() {
		for _, g := range []string{"stable.example.com", "beta.example.com"} {
			env.Resource(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition").Delete(t.Context(), "shirts."+g, metav1.DeleteOptions{})
		}
	})
	chart := berthtest.WriteChart(t, "shirts", shirtChart)
	stable := resource.Identity{Group: "stable.example.com", Kind: "Shirt", Namespace: env.Namespace, Name: "favourite"}
	beta := resource.Identity{Group: "beta.example.com", Kind: "Shirt", Namespace: env.Namespace, Name: "favourite"}

	berthtest.MustBerth(t, env, "install", "shirts", chart, "--wait")
	status, _ := berthtest.MustBerth(t, env, "status", "shirts")
	for _, id := range []resource.Identity{stable, beta} {
		if !strings.Contains(status, "  "+id.String()+"\n") {
			t.Errorf("status does not list kept %s:\n%s", id, status)
		}
	}
	uids := map[resource.Identity]types.UID{stable: shirtUID(t, env, stable), beta: shirtUID(t, env, beta)}

	out, _ := berthtest.MustBerth(t, env, "uninstall", "shirts")
	for id, uid := range uids {
		if !strings.Contains(out, id.String()) {
			t.Errorf("uninstall summary does not list kept %s:\n%s", id, out)
		}
		if got := shirtUID(t, env, id); got != uid {
			t.Errorf("%s was not kept (uid %s, was %s)", id, got, uid)
		}
	}
	berthtest.AssertNotRecorded(t, env, "shirts")

	// Reinstall adopts both kept Shirts, each in its own group.
	berthtest.MustBerth(t, env, "install", "shirts", chart, "--wait")
	for id, uid := range uids {
		if got := shirtUID(t, env, id); got != uid {
			t.Errorf("reinstall replaced %s (uid %s, was %s), want it adopted", id, got, uid)
		}
		assertOwnedBy(t, env, id, "shirts")
	}

	// An upgrade that drops the beta Shirt leaves it (kept) and stops managing it; the stable one
	// of the same name stays managed.
	berthtest.MustBerth(t, env, "upgrade", "shirts", chart, "--set", "beta=false", "--wait")
	if got := shirtUID(t, env, beta); got != uids[beta] {
		t.Errorf("the dropped, kept beta Shirt is gone or replaced (uid %q)", got)
	}
	manifest, _ := berthtest.MustBerth(t, env, "get", "manifest", "shirts")
	if strings.Contains(manifest, "beta.example.com") || !strings.Contains(manifest, "stable.example.com") {
		t.Errorf("revision 3 manifest should hold the stable Shirt only:\n%s", manifest)
	}
	assertOwnedBy(t, env, stable, "shirts")
}

func shirtUID(t *testing.T, env *testenv.Env, id resource.Identity) types.UID {
	t.Helper()
	obj, err := env.Resource(t, id.Group+"/v1", "Shirt").Get(t.Context(), id.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return obj.GetUID()
}

func assertOwnedBy(t *testing.T, env *testenv.Env, id resource.Identity, release string) {
	t.Helper()
	obj, err := env.Resource(t, id.Group+"/v1", "Shirt").Get(t.Context(), id.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	if rel, ns, ok := resource.OwnedBy(obj); !ok || rel != release || ns != env.Namespace {
		t.Errorf("%s is owned by %q in %q (%v), want %s", id, rel, ns, ok, release)
	}
}
