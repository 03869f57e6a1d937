package resource

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func objectsOf(kinds ...string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for i, kind := range kinds {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind(kind)
		obj.SetName(fmt.Sprintf("o%d", i))
		out = append(out, obj)
	}
	return out
}

func stageKinds(stages [][]*unstructured.Unstructured) []string {
	var out []string
	for _, stage := range stages {
		var kinds []string
		for _, obj := range stage {
			if !slices.Contains(kinds, obj.GetKind()) {
				kinds = append(kinds, obj.GetKind())
			}
		}
		out = append(out, strings.Join(kinds, "+"))
	}
	return out
}

// TestInstallStages: a chart of the usual kinds goes in three stages instead of eight, and each
// kind that depends on another is applied in a later stage than it.
func TestInstallStages(t *testing.T) {
	got := stageKinds(InstallStages(SortForInstall(objectsOf(
		"Deployment", "Service", "ConfigMap", "ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding", "Shirt"))))
	want := []string{"ServiceAccount+ConfigMap+Role+Service", "Secret+RoleBinding", "Deployment", "Shirt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}

	got = stageKinds(InstallStages(SortForInstall(objectsOf(
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "Ingress", "IngressClass",
		"HorizontalPodAutoscaler", "StatefulSet", "Job", "PersistentVolumeClaim", "StorageClass", "Namespace", "PriorityClass"))))
	want = []string{"PriorityClass+Namespace", "StorageClass+IngressClass", "PersistentVolumeClaim+Ingress",
		"HorizontalPodAutoscaler+StatefulSet+Job", "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
}

// TestInstallStagesKeepDependencies: for every pair of kinds of Helm's order, a kind that depends
// on an earlier one is applied in a later stage, and every workload after what its Pods use.
func TestInstallStagesKeepDependencies(t *testing.T) {
	order := InstallOrder()
	stages := InstallStages(SortForInstall(objectsOf(order...)))
	stageOf := stageOfKinds(stages)
	for i, kind := range order {
		for _, before := range order[:i] {
			if dependsOnKind(kind, before) && stageOf[kind] <= stageOf[before] {
				t.Errorf("%s depends on %s but goes in stage %d, not after its %d", kind, before, stageOf[kind], stageOf[before])
			}
		}
	}
	for _, workload := range workloads {
		if stageOf[workload] != stageOf["Deployment"] {
			t.Errorf("workload %s goes in stage %d, not with the other workloads", workload, stageOf[workload])
		}
		for _, input := range []string{"ServiceAccount", "Secret", "ConfigMap", "PersistentVolumeClaim", "RoleBinding", "Service", "NetworkPolicy", "LimitRange", "PriorityClass"} {
			if stageOf[workload] <= stageOf[input] {
				t.Errorf("workload %s does not go after %s", workload, input)
			}
		}
	}
}

// TestUninstallStages: the small chart's kinds are deleted in four stages instead of seven, and
// wherever two kinds depend on each other, Helm's uninstall order between them is kept.
func TestUninstallStages(t *testing.T) {
	got := stageKinds(UninstallStages(SortForUninstall(objectsOf(
		"Deployment", "Service", "ConfigMap", "ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding", "Shirt", "Namespace"))))
	want := []string{"Service", "Deployment", "RoleBinding+ConfigMap+Secret", "Role+ServiceAccount", "Namespace", "Shirt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}

	order := UninstallOrder()
	stages := UninstallStages(SortForUninstall(objectsOf(order...)))
	stageOf := stageOfKinds(stages)
	for i, kind := range order {
		for _, before := range order[:i] {
			if related(kind, before) && stageOf[kind] <= stageOf[before] {
				t.Errorf("%s goes in stage %d, not after %s (stage %d), which Helm deletes first and which it is related to", kind, stageOf[kind], before, stageOf[before])
			}
		}
	}
	if stageOf["Namespace"] <= stageOf["ConfigMap"] || stageOf["Deployment"] >= stageOf["ConfigMap"] || stageOf["ValidatingWebhookConfiguration"] != 0 {
		t.Errorf("stages %v: want the webhooks first, workloads before what their Pods use, the namespace after what it holds", stageKinds(stages))
	}
}

// stageOfKinds is the stage of each kind of stages.
func stageOfKinds(stages [][]*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for i, stage := range stages {
		for _, obj := range stage {
			out[obj.GetKind()] = i
		}
	}
	return out
}
