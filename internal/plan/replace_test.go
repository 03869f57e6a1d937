package plan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/resource"
)

// TestBuildReplaces deletes each object to replace by its live UID and waits until it is gone,
// just before the step that applies it.
func TestBuildReplaces(t *testing.T) {
	desired := objs(t, chart)
	deployment := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	service := resource.Identity{Kind: "Service", Namespace: "ns", Name: "web"}
	live := map[resource.Identity]*unstructured.Unstructured{}
	for _, obj := range desired {
		l := obj.DeepCopy()
		l.SetUID(types.UID("uid-" + obj.GetKind()))
		live[resource.IdentityOf(obj)] = l
	}
	p, err := Build(Input{Desired: desired, Live: live, Replace: []resource.Identity{deployment, service}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range p.Steps {
		if s.Action == Delete || s.Action == WaitAbsent || strings.HasSuffix(s.ID, "Service") || strings.HasPrefix(s.ID, "apply/Deployment") {
			got = append(got, s.ID)
		}
	}
	// The Service is applied in one stage with the ConfigMaps and the CRD (none depends on
	// another); only the Service of it is replaced.
	stage := "ConfigMap+CustomResourceDefinition.apiextensions.k8s.io+Service"
	want := []string{
		"replace/delete/" + stage, "replace/wait-absent/" + stage, "apply/" + stage,
		"replace/delete/Deployment.apps", "replace/wait-absent/Deployment.apps", "apply/Deployment.apps",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	for _, s := range p.Steps {
		if s.Action == Delete || s.Action == WaitAbsent {
			if len(s.Objects) != 1 || s.UID(s.Objects[0]) != live[s.Objects[0]].GetUID() {
				t.Errorf("%s: objects %v with UIDs %v, want one object by its live UID", s.ID, s.Objects, s.UIDs)
			}
		}
	}
	if r := p.Replaced(); len(r) != 2 || !r[deployment] || !r[service] {
		t.Errorf("Replaced() = %v, want %s and %s", r, deployment, service)
	}
}

// TestBuildRefusesReplacingWhatIsNotLive: a deletion without a UID could delete another object.
func TestBuildRefusesReplacingWhatIsNotLive(t *testing.T) {
	deployment := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	if _, err := Build(Input{Desired: objs(t, chart), Replace: []resource.Identity{deployment}}); err == nil {
		t.Error("Build replaced an object that is not live")
	}
}
