package cluster

import (
	"bytes"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// AppliedAsIs reports whether berth's server-side apply of desired would leave live exactly as
// it is, without asking the API server: every field desired sets has that value live, and
// berth's field manager owns exactly those fields, at desired's apiVersion, so the apply sets
// nothing and removes nothing. It says false whenever it cannot tell: an object with lists (whose
// keys only the schema knows), a null, a field berth owns that desired lacks, a value written
// differently than it is stored (stringData, quantities), fields still to adopt (SetByHelm). The
// API server's dry run decides those.
func AppliedAsIs(desired, live *unstructured.Unstructured) bool {
	if live == nil || desired.GetAPIVersion() != live.GetAPIVersion() {
		return false
	}
	fields := map[string]any{}
	for k, v := range desired.Object {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				return false
			}
			rest := map[string]any{}
			for mk, mv := range md {
				if mk != "name" && mk != "namespace" {
					rest[mk] = mv
				}
			}
			if len(rest) > 0 {
				fields[k] = rest
			}
		default:
			fields[k] = v
		}
	}
	if !sameScalars(fields, live.Object) {
		return false
	}
	if SetByHelm(live) {
		return false // fields of another apply move to berth's first: see AdoptFields
	}
	var owned *fieldpath.Set
	for _, e := range live.GetManagedFields() {
		if e.Manager != FieldManager || e.Subresource != "" || e.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		if owned != nil || e.APIVersion != desired.GetAPIVersion() || e.FieldsV1 == nil {
			return false
		}
		owned = &fieldpath.Set{}
		if err := owned.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return false
		}
	}
	return owned != nil && owned.Leaves().Equals(fieldpath.SetFromValue(value.NewValueInterface(fields)).Leaves())
}

// sameScalars reports whether every leaf of want, a tree of maps and scalars only, has the same
// value in have.
func sameScalars(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok || len(w) == 0 {
			return false // an empty map is a field of its own, and the schema says how
		}
		for k, v := range w {
			hv, found := h[k]
			if !found || !sameScalars(v, hv) {
				return false
			}
		}
		return true
	case string, bool:
		return want == have
	case int64:
		h, ok := have.(int64)
		return ok && w == h
	case float64:
		h, ok := have.(float64)
		return ok && w == h
	}
	return false // a list, a null, or anything else: the dry run decides
}
