package lifecycle

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/resource"
)

// TestUnchangedLeavesOutWhatItMustApply tells the engine to leave alone the objects that exist,
// whose dry run returned them as they are and whose apply does nothing more, CRDs included: not
// those Helm set fields on (adopted first), not objects of kinds not served yet, not objects that
// do not exist or whose dry run shows a change, and none with --take-ownership.
func TestUnchangedLeavesOutWhatItMustApply(t *testing.T) {
	obj := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetName(name)
		if kind != "CustomResourceDefinition" {
			u.SetNamespace("ns")
		}
		return u
	}
	plain := obj("v1", "ConfigMap", "plain")
	helms := obj("v1", "ConfigMap", "helms")
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "gadgets.example.com")
	gadget := obj("example.com/v1", "Gadget", "g")
	missing := obj("v1", "ConfigMap", "missing")
	undry := obj("v1", "ConfigMap", "undry")
	changed := obj("v1", "ConfigMap", "changed")

	p := &prepared{objects: []*unstructured.Unstructured{plain, helms, crd, gadget, missing, undry, changed},
		pendingKinds: map[schema.GroupKind]bool{{Group: "example.com", Kind: "Gadget"}: true}}
	live := func(u *unstructured.Unstructured) *unstructured.Unstructured {
		l := u.DeepCopy()
		l.SetResourceVersion("7")
		return l
	}
	before, applied := map[resource.Identity]*unstructured.Unstructured{}, map[resource.Identity]*unstructured.Unstructured{}
	for _, u := range []*unstructured.Unstructured{plain, helms, crd, gadget, undry, changed} {
		before[resource.IdentityOf(u)] = live(u)
	}
	before[resource.IdentityOf(helms)].SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate}})
	for _, u := range []*unstructured.Unstructured{plain, helms, crd, gadget, missing, changed} {
		applied[resource.IdentityOf(u)] = live(u)
	}
	applied[resource.IdentityOf(changed)].SetResourceVersion("8")
	p.facts.Survey(before, applied)
	var s survey

	var got []string
	for id := range s.unchanged(p, false) {
		got = append(got, id.Name)
	}
	slices.Sort(got)
	if want := []string{"gadgets.example.com", "plain"}; !slices.Equal(got, want) {
		t.Errorf("objects the engine may leave alone: %v, want %v", got, want)
	}
	if got := s.unchanged(p, true); len(got) != 0 {
		t.Errorf("with --take-ownership, objects the engine may leave alone: %v, want none", got)
	}
}
