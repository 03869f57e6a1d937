package cluster

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// AppliedAsIs reports whether berth's server-side apply of desired would leave live exactly as
// it is, without asking the API server: the fields berth's field manager owns (its Apply entry
// of live's managed fields, at desired's apiVersion) are exactly the fields desired sets, and
// each has desired's value live, so the apply sets nothing, removes nothing and takes nothing
// over. The API server's own record of those fields says how each list is merged: a list owned
// whole is atomic and compared whole; a list owned by element keys (k:) is compared element by
// element, matched by those keys, in the same order; a set (v:) is compared whole. Fields live
// has and desired lacks, which berth does not own (the API server's defaults, other managers'
// fields), are not a change.
//
// It says false whenever it cannot tell, and the API server's dry run decides: a null, an empty
// map or list whose live value differs, a list with elements that the record does not key (or
// keyed by a field desired leaves to a default), values written differently than they are
// stored (stringData, quantities), an atomic field other managers own
// parts of, fields still to adopt (SetByHelm).
func AppliedAsIs(desired, live *unstructured.Unstructured) bool {
	if live == nil || desired.GetAPIVersion() != live.GetAPIVersion() || SetByHelm(live) {
		return false
	}
	fields, ok := appliedFields(desired)
	if !ok {
		return false
	}
	var owned *fieldpath.Set
	others := &fieldpath.Set{}
	for _, e := range live.GetManagedFields() {
		mine := e.Manager == FieldManager && e.Subresource == "" && e.Operation == metav1.ManagedFieldsOperationApply
		if e.FieldsV1 == nil {
			if mine {
				return false
			}
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return false
		}
		if !mine {
			others = others.Union(set)
			continue
		}
		if owned != nil || e.APIVersion != desired.GetAPIVersion() {
			return false
		}
		owned = set
	}
	return owned != nil && sameMap(fields, live.Object, owned, others)
}

// appliedFields are the fields of desired that its apply sets and the API server records as
// the field manager's: all but apiVersion, kind, and the name and namespace (and a null
// creationTimestamp) that only identify it.
func appliedFields(desired *unstructured.Unstructured) (map[string]any, bool) {
	fields := map[string]any{}
	for k, v := range desired.Object {
		switch k {
		case "apiVersion", "kind":
		case "metadata":
			md, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			rest := map[string]any{}
			for mk, mv := range md {
				switch {
				case mk == "name" || mk == "namespace":
				case mk == "creationTimestamp" && mv == nil:
				default:
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
	return fields, true
}

// sameMap reports whether the apply of want, a map, leaves have as it is: the fields owned (the
// field manager's, at this path) are exactly want's keys, and each is the same live. others are
// the fields other managers own at this path.
func sameMap(want map[string]any, have any, owned, others *fieldpath.Set) bool {
	h, ok := have.(map[string]any)
	if !ok {
		return false
	}
	names := map[string]bool{}
	keyed := true
	note := func(pe fieldpath.PathElement) {
		if pe.FieldName == nil {
			keyed = false
			return
		}
		names[*pe.FieldName] = true
	}
	owned.Members.Iterate(note)
	owned.Children.Iterate(note)
	if !keyed || len(names) != len(want) {
		return false
	}
	for k, w := range want {
		hv, found := h[k]
		if !names[k] || !found || !sameField(w, hv, fieldpath.PathElement{FieldName: &k}, owned, others) {
			return false
		}
	}
	return true
}

// sameField reports whether the apply of want, the value of the field pe of a map, leaves its
// live value have as it is, with what the field manager owns of the map (owned) and what other
// managers own of it (others).
func sameField(want, have any, pe fieldpath.PathElement, owned, others *fieldpath.Set) bool {
	leaf := owned.Members.Has(pe)
	sub, deeper := owned.Children.Get(pe)
	otherSub := descend(others, pe)
	switch w := want.(type) {
	case map[string]any:
		if len(w) > 0 && deeper {
			return sameMap(w, have, sub, otherSub)
		}
		return leaf && !deeper && sameWhole(w, have, otherSub)
	case []any:
		if len(w) > 0 && deeper {
			return sameList(w, have, sub, otherSub)
		}
		return leaf && !deeper && sameWhole(w, have, otherSub)
	case string, bool, int64, float64:
		return leaf && !deeper && sameValue(want, have)
	}
	return false // a null, or a value unstructured objects do not hold
}

// sameWhole reports whether want, a value owned whole (an atomic list or map, or an empty one),
// is have exactly, and no other manager owns a part of it (then it may be a list or map merged
// by element, whose elements the apply would take over).
func sameWhole(want, have any, others *fieldpath.Set) bool {
	return others.Empty() && sameValue(want, have)
}

// sameValue reports whether want and have, values of unstructured objects, are written the same
// in JSON, as the apply sends want and the API server stores it: a number is the same whether it
// was read as an integer or a float (0 and 0.0), maps and lists are the same element by element.
func sameValue(want, have any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for k, v := range w {
			hv, found := h[k]
			if !found || !sameValue(v, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !sameValue(w[i], h[i]) {
				return false
			}
		}
		return true
	case int64:
		switch h := have.(type) {
		case int64:
			return w == h
		case float64:
			return numberJSON(h) == strconv.FormatInt(w, 10)
		}
		return false
	case float64:
		switch h := have.(type) {
		case float64:
			return w == h
		case int64:
			return numberJSON(w) == strconv.FormatInt(h, 10)
		}
		return false
	case string, bool, nil:
		return want == have
	}
	return false
}

// numberJSON is f as JSON writes it.
func numberJSON(f float64) string {
	b, err := json.Marshal(f)
	if err != nil {
		return "" // NaN or an infinity: never the same as an integer
	}
	return string(b)
}

// sameList reports whether the apply of want, a list the field manager owns by element (owned),
// leaves have as it is: an associative list whose elements owned keys by the same fields, with
// exactly want's elements, live in the same order, each the same; or a set of want's values,
// the same live.
func sameList(want []any, have any, owned, others *fieldpath.Set) bool {
	h, ok := have.([]any)
	if !ok || len(h) != len(want) {
		return false
	}
	var elements fieldpath.PathElementSet
	owned.Members.Iterate(elements.Insert)
	owned.Children.Iterate(elements.Insert)
	if elements.Size() != len(want) {
		return false
	}
	var keys []string
	byKey, byValue := true, true
	elements.Iterate(func(pe fieldpath.PathElement) {
		byKey = byKey && pe.Key != nil
		byValue = byValue && pe.Value != nil
		if pe.Key != nil {
			names := make([]string, len(*pe.Key))
			for i, f := range *pe.Key {
				names[i] = f.Name
			}
			if keys == nil {
				keys = names
			} else if !slices.Equal(keys, names) {
				byKey = false
			}
		}
	})
	var seen fieldpath.PathElementSet
	switch {
	case byKey && len(keys) > 0:
		for i, w := range want {
			wm, ok := w.(map[string]any)
			hm, hok := h[i].(map[string]any)
			if !ok || !hok {
				return false
			}
			pe, ok := keyOf(wm, keys)
			if !ok || seen.Has(pe) || !elements.Has(pe) {
				return false
			}
			seen.Insert(pe)
			if hpe, ok := keyOf(hm, keys); !ok || !hpe.Equals(pe) {
				return false
			}
			sub, ok := owned.Children.Get(pe)
			if !ok || !sameMap(wm, hm, sub, descend(others, pe)) {
				return false
			}
		}
		return true
	case byValue:
		for i, w := range want {
			switch w.(type) {
			case string, bool, int64, float64:
			default:
				return false
			}
			v := value.NewValueInterface(w)
			pe := fieldpath.PathElement{Value: &v}
			if seen.Has(pe) || !elements.Has(pe) || !sameValue(w, h[i]) {
				return false
			}
			seen.Insert(pe)
		}
		return true
	}
	return false // elements by index, or mixed: the dry run decides
}

// keyOf is the path element of a list element m keyed by the fields keys (sorted, as a path
// element's are); false when m lacks one or one is not a scalar.
func keyOf(m map[string]any, keys []string) (fieldpath.PathElement, bool) {
	fl := make(value.FieldList, 0, len(keys))
	for _, k := range keys {
		v, ok := m[k]
		if !ok {
			return fieldpath.PathElement{}, false
		}
		switch v.(type) {
		case string, bool, int64, float64:
		default:
			return fieldpath.PathElement{}, false
		}
		fl = append(fl, value.Field{Name: k, Value: value.NewValueInterface(v)})
	}
	fl.Sort()
	return fieldpath.PathElement{Key: &fl}, true
}

// descend is what s holds under pe: an empty set when nothing.
func descend(s *fieldpath.Set, pe fieldpath.PathElement) *fieldpath.Set {
	if sub, ok := s.Children.Get(pe); ok {
		return sub
	}
	return &fieldpath.Set{}
}
