package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAppliedAsIs(t *testing.T) {
	desired := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "c", "namespace": "ns", "labels": map[string]any{"app": "web"}},
			"data":     map[string]any{"a": "1", "b": "2"},
		}}
	}
	owned := `{"f:data":{"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`
	live := func(fields, manager string, data map[string]any) *unstructured.Unstructured {
		obj := desired()
		obj.Object["data"] = data
		obj.SetUID("u1")
		obj.SetResourceVersion("7")
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:x":{}}}}`)}},
			{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}},
		})
		return obj
	}
	same := map[string]any{"a": "1", "b": "2"}
	for _, tt := range []struct {
		name    string
		desired *unstructured.Unstructured
		live    *unstructured.Unstructured
		want    bool
	}{
		{"as applied", desired(), live(owned, FieldManager, same), true},
		{"a value changed", desired(), live(owned, FieldManager, map[string]any{"a": "1", "b": "3"}), false},
		{"berth owns a field the chart dropped", desired(), live(`{"f:data":{"f:a":{},"f:b":{},"f:c":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`, FieldManager,
			map[string]any{"a": "1", "b": "2", "c": "3"}), false},
		{"another manager owns them", desired(), live(owned, "kubectl", same), false},
		{"berth's former manager owns them", desired(), live(owned, formerManager, same), false},
		{"Helm's client-side apply set fields too", desired(), withEntry(live(owned, FieldManager, same),
			metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:c":{}}}`)}}), false},
		{"not there", desired(), nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := AppliedAsIs(tt.desired, tt.live); got != tt.want {
				t.Errorf("AppliedAsIs = %v, want %v", got, tt.want)
			}
		})
	}
	withList := desired()
	withList.Object["spec"] = map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}
	if AppliedAsIs(withList, live(owned, FieldManager, same)) {
		t.Error("AppliedAsIs of an object with a list = true, want the dry run to decide")
	}
}

// withEntry returns obj with e added to its managed fields.
func withEntry(obj *unstructured.Unstructured, e metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	obj.SetManagedFields(append(obj.GetManagedFields(), e))
	return obj
}
