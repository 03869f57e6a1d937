package lifecycle

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/release"
)

// crd is a CustomResourceDefinition of Kind Widget, in YAML, with what the case changes.
func crd(t *testing.T, group, scope, kind string, versions []string, stored ...string) *unstructured.Unstructured {
	t.Helper()
	var vs []map[string]any
	for i, v := range versions {
		vs = append(vs, map[string]any{"name": v, "served": true, "storage": i == len(versions)-1})
	}
	obj := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{"group": group, "scope": scope, "versions": vs,
			"names": map[string]any{"kind": kind, "plural": "widgets"}},
	}
	if stored != nil {
		obj["status"] = map[string]any{"storedVersions": stored}
	}
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCheckCRDUpdate(t *testing.T) {
	live := crd(t, "example.com", "Namespaced", "Widget", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	for _, tc := range []struct {
		name    string
		desired *unstructured.Unstructured
		want    []string // what the error says; none: allowed
	}{
		{"a version added", crd(t, "example.com", "Namespaced", "Widget", []string{"v1alpha1", "v1", "v2"}), nil},
		{"the same", crd(t, "example.com", "Namespaced", "Widget", []string{"v1alpha1", "v1"}), nil},
		{"a stored version dropped", crd(t, "example.com", "Namespaced", "Widget", []string{"v1"}),
			[]string{"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com", "drops version v1alpha1", "status.storedVersions"}},
		{"the scope changed", crd(t, "example.com", "Cluster", "Widget", []string{"v1alpha1", "v1"}),
			[]string{"spec.scope", `"Namespaced"`, `"Cluster"`}},
		{"the kind changed", crd(t, "example.com", "Namespaced", "Gadget", []string{"v1alpha1", "v1"}),
			[]string{"spec.names.kind", `"Widget"`, `"Gadget"`}},
		{"the group changed", crd(t, "example.org", "Namespaced", "Widget", []string{"v1alpha1", "v1"}),
			[]string{"spec.group", `"example.org"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCRDUpdate(live, tc.desired)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *CRDUpdateError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *CRDUpdateError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q: %v", w, err)
				}
			}
		})
	}
}

func TestCRDPolicyDefaults(t *testing.T) {
	for _, tc := range []struct {
		p    CRDPolicy
		op   release.Operation
		want CRDPolicy
	}{
		{CRDsDefault, release.OpInstall, CRDsCreate},
		{CRDsDefault, release.OpUpgrade, CRDsSkip},
		{CRDsDefault, release.OpRollback, CRDsSkip},
		{CRDsCreateReplace, release.OpUpgrade, CRDsCreateReplace},
		{CRDsSkip, release.OpInstall, CRDsSkip},
	} {
		if got := tc.p.of(tc.op); got != tc.want {
			t.Errorf("%q on %s: %q, want %q", tc.p, tc.op, got, tc.want)
		}
	}
}
