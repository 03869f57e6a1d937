package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/resource"
)

// hookRunner runs every lifecycle step at once.
type hookRunner struct{ f *fakeCluster }

func (r hookRunner) RunStep(_ context.Context, step plan.Step) error {
	r.f.record(string(step.Action) + " " + step.ID)
	return nil
}

// TestExecuteLeavesUnchangedObjectsAlone applies ConfigMaps of which one was found unchanged
// before the operation: only that one is not applied, and it is unchanged; the others are
// configured or created, as decided before their apply. After a step that runs hooks or adopts
// objects, which may change objects after they were read, every object is applied. The change
// set lists them in the step's order, whatever order they completed in.
func TestExecuteLeavesUnchangedObjectsAlone(t *testing.T) {
	id := func(name string) resource.Identity { return resource.IdentityOf(cm(name, "")) }
	var desired []*unstructured.Unstructured
	for _, name := range []string{"same", "changed", "new", "gone"} {
		desired = append(desired, cm(name, ""))
	}
	// "new" is not there before, and yet "unchanged": never left alone.
	objects := records(desired, cm("same", "7"), cm("changed", "7"))
	unchanged := map[resource.Identity]bool{id("same"): true, id("new"): true}
	all := []resource.Identity{id("changed"), id("same"), id("new")}
	for _, tc := range []struct {
		name        string
		first       *plan.Step
		wantApplied []string
		wantSame    Change
	}{
		{name: "found unchanged", wantSame: Unchanged, wantApplied: []string{
			"apply ConfigMap/ns/changed", "apply ConfigMap/ns/new"}},
		{name: "after hooks", first: &plan.Step{ID: "hooks/pre-upgrade", Action: plan.RunHooks}, wantSame: Configured, wantApplied: []string{
			"apply ConfigMap/ns/changed", "apply ConfigMap/ns/new", "apply ConfigMap/ns/same"}},
		{name: "after adopt", first: &plan.Step{ID: "adopt", Action: plan.Adopt}, wantSame: Configured, wantApplied: []string{
			"apply ConfigMap/ns/changed", "apply ConfigMap/ns/new", "apply ConfigMap/ns/same"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &plan.Plan{Steps: []plan.Step{{ID: "apply/ConfigMap", Action: plan.Apply, Objects: all}}}
			if tc.first != nil {
				p.Steps = append([]plan.Step{*tc.first}, p.Steps...)
			}
			f := &fakeCluster{}
			opts := DefaultOptions()
			opts.Objects, opts.Unchanged = objects, unchanged
			opts.Steps = hookRunner{f: f}
			var changed []string
			opts.Events = func(e Event) {
				if e.Type == ObjectChanged {
					changed = append(changed, e.Object.Name+" "+e.Message)
				}
			}
			res, err := Execute(context.Background(), f, p, opts)
			if err != nil {
				t.Fatal(err)
			}
			var applies []string
			for _, c := range f.calls {
				if strings.HasPrefix(c, "apply ") {
					applies = append(applies, c)
				}
			}
			if diff := cmp.Diff(tc.wantApplied, applies, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("applies (-want +got):\n%s", diff)
			}
			want := []ChangeSetEntry{
				{Object: id("changed"), Change: Configured, Step: "apply/ConfigMap"},
				{Object: id("same"), Change: tc.wantSame, Step: "apply/ConfigMap"},
				{Object: id("new"), Change: Created, Step: "apply/ConfigMap"},
			}
			if diff := cmp.Diff(want, res.Changes.Entries, cmpopts.IgnoreFields(ChangeSetEntry{}, "Took")); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if len(changed) != len(all) {
				t.Errorf("object events %v, want one for each object", changed)
			}
		})
	}
}

// TestChangeSetOfAReplacement deletes an object and applies it again, as a replacement does, and
// keeps another: the change set has one entry for the replaced object, created, in the apply's
// place, and the kept one last, kept.
func TestChangeSetOfAReplacement(t *testing.T) {
	a, b, kept := cm("a", ""), cm("b", ""), resource.IdentityOf(cm("kept", ""))
	ida, idb := resource.IdentityOf(a), resource.IdentityOf(b)
	p := &plan.Plan{Steps: []plan.Step{
		{ID: "delete/ConfigMap", Action: plan.Delete, Objects: []resource.Identity{ida}, UIDs: []types.UID{"u"}},
		{ID: "apply/ConfigMap/b", Action: plan.Apply, Objects: []resource.Identity{idb}},
		{ID: "apply/ConfigMap/a", Action: plan.Apply, Objects: []resource.Identity{ida}},
	}, Kept: []resource.Identity{kept}}
	opts := DefaultOptions()
	opts.Objects = records([]*unstructured.Unstructured{a, b}, cm("a", "3"), cm("b", "3"))
	res, err := Execute(context.Background(), &fakeCluster{}, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []ChangeSetEntry{
		{Object: idb, Change: Configured, Step: "apply/ConfigMap/b"},
		{Object: ida, Change: Created, Step: "apply/ConfigMap/a"},
		{Object: kept, Change: Kept},
	}
	if diff := cmp.Diff(want, res.Changes.Entries, cmpopts.IgnoreFields(ChangeSetEntry{}, "Took")); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
