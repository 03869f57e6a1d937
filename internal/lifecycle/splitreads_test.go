package lifecycle

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/resource"
)

// TestSplitReads: the survey reads first the recorded objects, at the version of their prepared
// copy, and the new objects that cost no request of their own: those of kinds not served yet, and
// those listed anyway with recorded objects of their resource and namespace (as many in all as
// make a read list them); every other new object is read only when its dry run does not show it
// missing. With readAll, every object is read first.
func TestSplitReads(t *testing.T) {
	obj := func(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(namespace)
		u.SetName(name)
		return u
	}
	var recorded, objects []*unstructured.Unstructured
	// ConfigMaps in ns: 2 recorded, 7 new: 9 are listed in one request.
	for i := range 9 {
		cm := obj("v1", "ConfigMap", "ns", fmt.Sprintf("cm-%d", i))
		objects = append(objects, cm)
		if i < 2 {
			recorded = append(recorded, obj("v1", "ConfigMap", "ns", fmt.Sprintf("cm-%d", i)))
		}
	}
	// ConfigMaps in another namespace: 9 new, none recorded: no read lists them.
	for i := range 9 {
		objects = append(objects, obj("v1", "ConfigMap", "other", fmt.Sprintf("cm-%d", i)))
	}
	// A Deployment recorded at an older version, and a new one.
	recorded = append(recorded, obj("apps/v1beta1", "Deployment", "ns", "web"))
	objects = append(objects, obj("apps/v1", "Deployment", "ns", "web"), obj("apps/v1", "Deployment", "ns", "api"))
	// An object of a kind not served yet, and a recorded object that leaves the release.
	objects = append(objects, obj("example.com/v1", "Gadget", "ns", "g"))
	recorded = append(recorded, obj("v1", "Secret", "ns", "gone"))
	p := &prepared{objects: objects, pendingKinds: map[schema.GroupKind]bool{{Group: "example.com", Kind: "Gadget"}: true}}

	names := func(objs []*unstructured.Unstructured) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.GetAPIVersion()+" "+resource.IdentityOf(o).String())
		}
		slices.Sort(out)
		return out
	}
	first, later := p.splitReads(recorded, false)
	var wantFirst []string
	for i := range 9 {
		wantFirst = append(wantFirst, fmt.Sprintf("v1 ConfigMap/ns/cm-%d", i))
	}
	wantFirst = append(wantFirst, "apps/v1 Deployment.apps/ns/web", "example.com/v1 Gadget.example.com/ns/g", "v1 Secret/ns/gone")
	slices.Sort(wantFirst)
	if got := names(first); !slices.Equal(got, wantFirst) {
		t.Errorf("read first:\n%v\nwant\n%v", got, wantFirst)
	}
	var wantLater []string
	for i := range 9 {
		wantLater = append(wantLater, fmt.Sprintf("v1 ConfigMap/other/cm-%d", i))
	}
	wantLater = append(wantLater, "apps/v1 Deployment.apps/ns/api")
	slices.Sort(wantLater)
	if got := names(later); !slices.Equal(got, wantLater) {
		t.Errorf("read after the dry runs:\n%v\nwant\n%v", got, wantLater)
	}

	// A recorded ConfigMap that leaves the release and 6 new ones: 7 are not listed, so the new
	// ones are not read first.
	few := &prepared{objects: objects[3:9]}
	first, later = few.splitReads(recorded[:1], false)
	if got := names(first); !slices.Equal(got, []string{"v1 ConfigMap/ns/cm-0"}) || len(later) != 6 {
		t.Errorf("with 1 recorded and 6 new ConfigMaps, read first %v, later %v; want the recorded one first, the 6 later", got, names(later))
	}

	first, later = p.splitReads(recorded, true)
	if len(later) != 0 || len(first) != len(objects)+1 {
		t.Errorf("with readAll, read first %d objects and %d later, want %d and none", len(first), len(later), len(objects)+1)
	}
}
