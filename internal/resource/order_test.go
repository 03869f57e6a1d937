package resource

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOrdersAreHelms(t *testing.T) {
	if got, want := InstallOrder(), []string(releaseutil.InstallOrder); !slices.Equal(got, want) {
		t.Errorf("InstallOrder() = %v, want Helm's %v", got, want)
	}
	if got, want := UninstallOrder(), []string(releaseutil.UninstallOrder); !slices.Equal(got, want) {
		t.Errorf("UninstallOrder() = %v, want Helm's %v", got, want)
	}
	o := InstallOrder()
	o[0] = "changed"
	if InstallOrder()[0] != "PriorityClass" {
		t.Error("InstallOrder() returned shared data")
	}
}

// mixedKinds holds known kinds out of order, repeated kinds (to check stability) and unknown kinds.
var mixedKinds = []string{
	"Shirt", "Deployment", "ValidatingWebhookConfiguration", "Service", "ConfigMap", "Alpha",
	"Namespace", "Deployment", "CustomResourceDefinition", "Job", "Shirt", "MutatingWebhookConfiguration",
	"ServiceAccount", "ClusterRole", "Ingress", "ConfigMap", "Zebra", "PriorityClass", "Secret", "Alpha",
	"HorizontalPodAutoscaler", "StatefulSet", "Role", "RoleBinding", "APIService", "DaemonSet",
}

func TestSortMatchesHelm(t *testing.T) {
	var b strings.Builder
	var objs []*unstructured.Unstructured
	for i, kind := range mixedKinds {
		name := fmt.Sprintf("obj-%02d", i)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: %s\nmetadata:\n  name: %s\n", kind, name)
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind(kind)
		obj.SetName(name)
		objs = append(objs, obj)
	}
	files := map[string]string{"chart/templates/all.yaml": b.String()}
	tests := []struct {
		name   string
		sort   func([]*unstructured.Unstructured) []*unstructured.Unstructured
		helmOr releaseutil.KindSortOrder
	}{
		{"install", SortForInstall, releaseutil.InstallOrder},
		{"uninstall", SortForUninstall, releaseutil.UninstallOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, manifests, err := releaseutil.SortManifests(files, nil, tt.helmOr)
			if err != nil {
				t.Fatalf("helm SortManifests: %v", err)
			}
			var want, got []string
			for _, m := range manifests {
				want = append(want, m.Head.Kind+"/"+m.Head.Metadata.Name)
			}
			for _, o := range tt.sort(objs) {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if !slices.Equal(got, want) {
				t.Errorf("sorted\n got  %v\n want %v", got, want)
			}
		})
	}
	if objs[0].GetKind() != "Shirt" {
		t.Error("sorting modified its input")
	}
}
