package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/resource"
)

// hookRunner runs every lifecycle step at once.
type hookRunner struct{ f *fakeCluster }

func (r hookRunner) RunStep(_ context.Context, step plan.Step) error {
	r.f.record(string(step.Action) + " " + step.ID)
	return nil
}

// TestExecuteLeavesUnchangedObjectsAlone applies a ConfigMap whose dry run returned the live
// object exactly, and others whose dry run did not, or was not made, or which did not exist: only
// the first is not applied, and it is unchanged; after a step that runs hooks or adopts objects,
// which may change objects after their dry run, every object is applied.
func TestExecuteLeavesUnchangedObjectsAlone(t *testing.T) {
	withData := func(obj *unstructured.Unstructured, v string) *unstructured.Unstructured {
		obj.Object["data"] = map[string]any{"k": v}
		return obj
	}
	id := func(name string) resource.Identity { return resource.IdentityOf(cm(name, "")) }
	desired := map[resource.Identity]*unstructured.Unstructured{}
	for _, name := range []string{"same", "changed", "moved", "undry", "metadata", "new"} {
		desired[id(name)] = withData(cm(name, ""), "v")
	}
	before := map[resource.Identity]*unstructured.Unstructured{
		id("same"):    withData(cm("same", "7"), "v"),
		id("changed"): withData(cm("changed", "7"), "old"),
		id("moved"):   withData(cm("moved", "7"), "v"),
		id("undry"):   withData(cm("undry", "7"), "v"),
		// Metadata alone, and no resourceVersion: not a live object read whole.
		id("metadata"): withData(cm("metadata", ""), "v"),
	}
	applied := map[resource.Identity]*unstructured.Unstructured{
		id("same"):     withData(cm("same", "7"), "v"),
		id("changed"):  withData(cm("changed", "7"), "v"),
		id("moved"):    withData(cm("moved", "8"), "v"), // the same content, written since
		id("metadata"): withData(cm("metadata", ""), "v"),
		id("new"):      withData(cm("new", "1"), "v"),
	}
	all := []resource.Identity{id("same"), id("changed"), id("moved"), id("undry"), id("metadata"), id("new")}
	for _, tc := range []struct {
		name        string
		first       *plan.Step
		wantApplied []string
		wantSame    Change
	}{
		{name: "dry run equals live", wantSame: Unchanged, wantApplied: []string{
			"apply ConfigMap/ns/changed", "apply ConfigMap/ns/metadata", "apply ConfigMap/ns/moved", "apply ConfigMap/ns/new", "apply ConfigMap/ns/undry"}},
		{name: "after hooks", first: &plan.Step{ID: "hooks/pre-upgrade", Action: plan.RunHooks}, wantSame: Configured, wantApplied: []string{
			"apply ConfigMap/ns/changed", "apply ConfigMap/ns/metadata", "apply ConfigMap/ns/moved", "apply ConfigMap/ns/new", "apply ConfigMap/ns/same", "apply ConfigMap/ns/undry"}},
		{name: "after adopt", first: &plan.Step{ID: "adopt", Action: plan.Adopt}, wantSame: Configured, wantApplied: []string{
			"apply ConfigMap/ns/changed", "apply ConfigMap/ns/metadata", "apply ConfigMap/ns/moved", "apply ConfigMap/ns/new", "apply ConfigMap/ns/same", "apply ConfigMap/ns/undry"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &plan.Plan{Steps: []plan.Step{{ID: "apply/ConfigMap", Action: plan.Apply, Objects: all}}}
			if tc.first != nil {
				p.Steps = append([]plan.Step{*tc.first}, p.Steps...)
			}
			f := &fakeCluster{}
			opts := DefaultOptions()
			opts.Concurrency = 1
			opts.Objects, opts.Before, opts.Applied = desired, before, applied
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
			want := map[resource.Identity]Change{
				id("same"): tc.wantSame, id("changed"): Configured, id("moved"): Configured,
				id("undry"): Configured, id("metadata"): Configured, id("new"): Created,
			}
			if diff := cmp.Diff(want, res.Changes); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if len(changed) != len(all) {
				t.Errorf("object events %v, want one for each object", changed)
			}
		})
	}
}
