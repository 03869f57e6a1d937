package cluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, sub, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "apps/v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

func TestAdoptManagedFields(t *testing.T) {
	in := []metav1.ManagedFieldsEntry{
		entry("helm", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:replicas":{}}}`),
		entry("helm", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{"f:team":{}}}}`),
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{}}`),
		entry("berth", metav1.ManagedFieldsOperationApply, "", `{"f:spec":{"f:paused":{}}}`),
	}
	out, changed, err := adoptManagedFields(in, []string{"helm"}, "berth")
	if err != nil || !changed {
		t.Fatalf("adopt: changed %v, %v", changed, err)
	}
	if len(out) != 2 {
		t.Fatalf("entries %+v, want the status entry and berth's", out)
	}
	got := map[string]string{}
	for _, e := range out {
		got[e.Manager+"/"+string(e.Operation)] = string(e.FieldsV1.Raw)
	}
	if got["berth/Apply"] != `{"f:metadata":{"f:annotations":{"f:team":{}}},"f:spec":{"f:paused":{},"f:replicas":{}}}` {
		t.Errorf("berth's fields = %s", got["berth/Apply"])
	}
	if _, ok := got["kube-controller-manager/Update"]; !ok {
		t.Error("the status entry of another manager was touched")
	}

	same, changed, _ := adoptManagedFields(out, []string{"helm"}, "berth")
	if changed || len(same) != len(out) {
		t.Error("adopting again changed something")
	}
}
