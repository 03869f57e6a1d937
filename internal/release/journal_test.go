package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
)

func TestJournalRoundTrip(t *testing.T) {
	env := testenv.New(t)
	js := NewJournals(env.Client.CoreV1(), env.Namespace)
	if j, err := js.Get(t.Context(), "web"); j != nil || err != nil {
		t.Fatalf("get before put: %+v, %v; want none", j, err)
	}
	j := &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning,
		Plan: &plan.Plan{Steps: []plan.Step{{ID: "apply/ConfigMap", Action: plan.Apply}}}}
	version := ""
	for _, step := range []string{"", "apply/ConfigMap"} {
		if step != "" {
			j.Steps = append(j.Steps, step)
		}
		var err error
		if version, err = js.Put(t.Context(), j, version); err != nil {
			t.Fatal(err)
		}
	}
	got, read, err := js.Read(t.Context(), "web")
	if err != nil || !got.StepDone("apply/ConfigMap") || got.Operation != OpUpgrade || len(got.Plan.Steps) != 1 || read != version {
		t.Fatalf("read: %+v at version %q (%v), want the journal at version %q", got, read, err, version)
	}
	if err := js.Delete(t.Context(), "web", version); err != nil {
		t.Fatal(err)
	}
	if err := js.Delete(t.Context(), "web", version); err != nil {
		t.Fatalf("delete twice: %v", err)
	}
	if j, err := js.Get(t.Context(), "web"); j != nil || err != nil {
		t.Fatalf("get after delete: %+v, %v; want none", j, err)
	}
}

// TestJournalWritesAreConditional: an operation whose journal another operation wrote since it
// last read or wrote it (the other took the release over) can neither overwrite nor delete it.
func TestJournalWritesAreConditional(t *testing.T) {
	env := testenv.New(t)
	js := NewJournals(env.Client.CoreV1(), env.Namespace)
	ctx := t.Context()
	old := &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning, Holder: "old"}
	oldVersion, err := js.Put(ctx, old, "")
	if err != nil {
		t.Fatal(err)
	}
	// The new holder reads the journal and writes its own.
	_, read, err := js.Read(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	taken := &Journal{Release: "web", Operation: OpUpgrade, Revision: 2, State: JournalRunning, Holder: "new"}
	newVersion, err := js.Put(ctx, taken, read)
	if err != nil {
		t.Fatal(err)
	}

	for what, err := range map[string]error{
		"overwrite at the version it wrote": func() error { _, err := js.Put(ctx, old, oldVersion); return err }(),
		"create over it":                    func() error { _, err := js.Put(ctx, old, ""); return err }(),
		"delete at the version it wrote":    js.Delete(ctx, "web", oldVersion),
	} {
		var changed *JournalChangedError
		if !errors.As(err, &changed) || !errors.Is(err, ErrLost) {
			t.Errorf("the old holder's %s: %v, want a *JournalChangedError (ErrLost)", what, err)
		}
	}
	if err := js.Delete(ctx, "web", ""); err != nil {
		t.Errorf("delete by one that saw no journal: %v, want nothing done", err)
	}
	got, version, err := js.Read(ctx, "web")
	if err != nil || got == nil || got.Holder != "new" || version != newVersion {
		t.Fatalf("journal after the old holder's writes: %+v at %q (%v), want the new holder's at %q", got, version, err, newVersion)
	}
	if err := js.Delete(ctx, "web", newVersion); err != nil {
		t.Fatalf("the new holder's delete: %v", err)
	}
}

// TestJournalOfThousandsOfObjects checks that the journal of a plan too large for one Secret as
// JSON is kept gzipped, and reads back whole.
func TestJournalOfThousandsOfObjects(t *testing.T) {
	env := testenv.New(t)
	js := NewJournals(env.Client.CoreV1(), env.Namespace)
	j := &Journal{Release: "many", Operation: OpInstall, Revision: 1, State: JournalRunning, Plan: &plan.Plan{}}
	for i := range 12000 {
		id := resource.Identity{Group: "apps", Kind: "Deployment", Namespace: env.Namespace,
			Name: fmt.Sprintf("a-deployment-with-a-long-name-%05d", i)}
		j.Plan.Steps = append(j.Plan.Steps, plan.Step{ID: "apply/" + id.Name, Action: plan.Apply,
			Objects: []resource.Identity{id}, Reason: "the chart has it"})
	}
	if b, _ := json.Marshal(j); len(b) <= MaxObjectData {
		t.Fatalf("the journal's JSON is %d bytes: the test needs more than one Secret holds", len(b))
	}
	version, err := js.Put(t.Context(), j, "")
	if err != nil {
		t.Fatal(err)
	}
	got, read, err := js.Read(t.Context(), "many")
	if err != nil || read != version || len(got.Plan.Steps) != len(j.Plan.Steps) || got.Plan.Steps[11999].Objects[0] != j.Plan.Steps[11999].Objects[0] {
		t.Fatalf("read back %v at %q (%v)", got != nil, read, err)
	}
}
