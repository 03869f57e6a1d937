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
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:spec":{"f:minReadySeconds":{}}}`),
	}
	out, changed, err := adoptManagedFields(in, "helm")
	if err != nil || !changed {
		t.Fatalf("adopt: changed %v, %v", changed, err)
	}
	if len(out) != 3 {
		t.Fatalf("entries %+v, want the status entry, kubectl's and helm's Apply", out)
	}
	got := map[string]string{}
	for _, e := range out {
		got[e.Manager+"/"+string(e.Operation)] = string(e.FieldsV1.Raw)
	}
	if got["helm/Apply"] != `{"f:metadata":{"f:annotations":{"f:team":{}}},"f:spec":{"f:paused":{},"f:replicas":{}}}` {
		t.Errorf("helm's Apply fields = %s", got["helm/Apply"])
	}
	for _, kept := range []string{"kube-controller-manager/Update", "kubectl-edit/Update"} {
		if _, ok := got[kept]; !ok {
			t.Errorf("the entry %s of another manager was touched", kept)
		}
	}

	same, changed, _ := adoptManagedFields(out, "helm")
	if changed || len(same) != len(out) {
		t.Error("adopting again changed something")
	}
}
