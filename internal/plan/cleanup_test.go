package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/resource"
)

func TestCleanup(t *testing.T) {
	obj := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace("ns")
		u.SetName(name)
		return u
	}
	cm, deploy, svc := obj("v1", "ConfigMap", "c"), obj("apps/v1", "Deployment", "d"), obj("v1", "Service", "s")
	live := map[resource.Identity]*unstructured.Unstructured{}
	for i, o := range []*unstructured.Unstructured{cm, deploy} {
		l := o.DeepCopy()
		l.SetUID(types.UID([]string{"uid-c", "uid-d"}[i]))
		live[resource.IdentityOf(o)] = l
	}
	p := Cleanup([]*unstructured.Unstructured{cm, deploy, svc}, live)
	var got []string
	for _, s := range p.Steps {
		got = append(got, s.ID)
		for i, id := range s.Objects {
			got = append(got, "  "+id.Name+" "+string(s.UIDs[i]))
		}
	}
	// The Service is not live: nothing deletes it. Deployments go before ConfigMaps, as Helm
	// uninstalls.
	want := []string{
		"cleanup/delete/Deployment.apps", "  d uid-d",
		"cleanup/delete/ConfigMap", "  c uid-c",
		"cleanup/wait-absent", "  d uid-d", "  c uid-c",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cleanup plan (-want +got):\n%s", diff)
	}
	if p := Cleanup([]*unstructured.Unstructured{svc}, live); len(p.Steps) != 0 {
		t.Errorf("cleanup of objects that are not live has steps: %+v", p.Steps)
	}
}
