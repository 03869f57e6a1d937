package plan

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/readiness"
	"github.com/berthdev/berth/internal/resource"
)

// TestObjectsFlow follows the records of an upgrade's objects from preparation through the
// survey to the plan: each stage adds to the one record of an object, and the views the engine
// and the preview read come from those records.
func TestObjectsFlow(t *testing.T) {
	cm := func(name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetName(name)
		u.SetNamespace("ns")
		u.SetResourceVersion(rv)
		return u
	}
	kept, gone, changed, added := cm("kept", ""), cm("gone", ""), cm("changed", ""), cm("added", "")
	changed.SetAnnotations(map[string]string{readiness.AnnotationSuccess: `["{.phase} == Ready"]`})
	liveChanged := cm("changed", "7")
	resource.SetOwnership(liveChanged, "web", "ns")
	id := resource.IdentityOf

	var o Objects
	o.Desire(changed, false)
	o.Desire(added, false)
	o.Record([]*unstructured.Unstructured{gone, kept, changed})
	o.Record([]*unstructured.Unstructured{cm("gone", "other copy")})
	o.Survey(map[resource.Identity]*unstructured.Unstructured{id(changed): liveChanged, id(gone): cm("gone", "3"), id(kept): cm("kept", "4")},
		map[resource.Identity]*unstructured.Unstructured{id(changed): cm("changed", "8"), id(added): cm("added", "")})
	o.Planned(&Plan{Steps: []Step{
		{ID: "apply/ConfigMap", Action: Apply, Objects: []resource.Identity{id(changed), id(added)}},
		{ID: "delete/ConfigMap", Action: Delete, Objects: []resource.Identity{id(gone)}},
	}, Kept: []resource.Identity{id(kept)}})

	changes := map[string]Change{}
	for _, f := range o.All() {
		changes[f.ID.Name] = f.Change
	}
	want := map[string]Change{"changed": Configured, "added": Created, "gone": Deleted, "kept": Kept}
	if !equalMaps(changes, want) {
		t.Errorf("changes: %v, want %v", changes, want)
	}
	f := o.Get(id(changed))
	if f.Desired != changed || f.Recorded != changed || f.Live != liveChanged || f.Applied.GetResourceVersion() != "8" {
		t.Errorf("record of %s: %+v, want its desired, recorded, live and dry-run objects", f.ID, f)
	}
	if f.Owner != (Owner{Release: "web", Namespace: "ns"}) || f.Ready.Success == "" {
		t.Errorf("record of %s: owner %+v, readiness %+v, want release web/ns and its success rule", f.ID, f.Owner, f.Ready)
	}
	if g := o.Get(id(gone)); g.Recorded != gone {
		t.Errorf("recorded copy of %s: %v, want the first recorded", g.ID, g.Recorded.GetResourceVersion())
	}
	var recorded []string
	for _, obj := range o.RecordedObjects() {
		recorded = append(recorded, obj.GetName())
	}
	if want := []string{"gone", "kept", "changed"}; !slices.Equal(recorded, want) {
		t.Errorf("recorded objects: %v, want %v (in the order recorded)", recorded, want)
	}
	d := slices.DeleteFunc(o.All(), func(f *Object) bool { return f.Desired == nil })
	if l := o.Live(); len(d) != 2 || len(l) != 3 || o.Named(id(gone)) != gone || o.Named(id(changed)) != changed {
		t.Errorf("views: %d desired, %d live objects, want 2 and 3, and each named by its desired copy first", len(d), len(l))
	}
	var none *Objects
	if none.Get(id(changed)) != nil || none.LiveOf(id(changed)) != nil || none.RecordedObjects() != nil {
		t.Error("no records must answer nothing")
	}
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
