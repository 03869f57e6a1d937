package lifecycle_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/plan"
	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/resource"
	"github.com/berthdev/berth/internal/testenv"
)

// TestCorrectDriftIsAJournalledPlan changes an object of a deployed release by hand and corrects
// it: the correction runs as an operation whose one apply step puts the object back, its journal
// is gone once it ends, and no revision is added. A correction of a release whose upgrade was
// interrupted is refused, naming it, and changes nothing.
func TestCorrectDriftIsAJournalledPlan(t *testing.T) {
	env := testenv.New(t)
	d, _ := secretDeps(t, env, "berth test")
	ch, err := chart.Load(writeChart(t, map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"2\"}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: env.Namespace, Chart: ch}); err != nil {
		t.Fatal(err)
	}
	cms := env.Client.CoreV1().ConfigMaps(env.Namespace)
	if _, err := cms.Patch(ctx, "web-config", types.MergePatchType, []byte(`{"data":{"replicas":"7"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the controller's drift check finds: the recorded object.
	recorded := func(ctx context.Context, last *release.Release) ([]*unstructured.Unstructured, error) {
		objs, err := resource.ParseManifest(last.Manifest)
		for _, o := range objs {
			o.SetNamespace(env.Namespace)
		}
		return objs, err
	}
	res, err := lifecycle.CorrectDrift(ctx, d, lifecycle.CorrectOptions{Name: "web", Find: recorded})
	if err != nil {
		t.Fatal(err)
	}
	want := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "web-config"}
	if res.Revision != 1 || len(res.Corrected) != 1 || res.Corrected[0] != want {
		t.Errorf("correction of revision %d put back %v, want revision 1 and %v", res.Revision, res.Corrected, want)
	}
	if len(res.Runs) != 1 || res.Runs[0].Operation != release.OpCorrect || len(res.Runs[0].Plan.Steps) != 1 || res.Runs[0].Plan.Steps[0].Action != plan.Apply {
		t.Errorf("runs of the correction: %+v, want one correct-drift run of one apply step", res.Runs)
	}
	if cm, err := cms.Get(ctx, "web-config", metav1.GetOptions{}); err != nil || cm.Data["replicas"] != "2" {
		t.Errorf("after the correction the ConfigMap is %v (%v), want replicas 2", cm.Data, err)
	}
	if j, _, err := d.Journals.Read(ctx, "web"); err != nil || j != nil {
		t.Errorf("journal after the correction: %+v (%v), want none", j, err)
	}
	if last, err := d.Store.Last(ctx, "web"); err != nil || last.Version != 1 || last.Info.Status != release.StatusDeployed {
		t.Errorf("last revision after the correction: %+v (%v), want revision 1 deployed", last, err)
	}

	// An upgrade interrupted after it recorded revision 2: the correction waits for it.
	last, err := d.Store.Last(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	pending := *last
	pending.Version, pending.Info.Status = 2, release.StatusPendingUpgrade
	if err := d.Store.Create(ctx, &pending); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx, "web-config", types.MergePatchType, []byte(`{"data":{"replicas":"9"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = lifecycle.CorrectDrift(ctx, d, lifecycle.CorrectOptions{Name: "web", Find: recorded})
	var nd *lifecycle.NotDeployedError
	if !errors.As(err, &nd) || nd.Interrupted == nil || nd.Interrupted.Operation != release.OpUpgrade {
		t.Fatalf("correction of a release with an interrupted upgrade: %v, want a *NotDeployedError naming the upgrade", err)
	}
	if cm, err := cms.Get(ctx, "web-config", metav1.GetOptions{}); err != nil || cm.Data["replicas"] != "9" {
		t.Errorf("after the refused correction the ConfigMap is %v (%v), want it as it was (replicas 9)", cm.Data, err)
	}
}

// TestStoppedCorrectionIsNotResumed: a correction killed midway leaves its journal, which is not
// finished from (only the check knows what to apply): the next correction goes on over it, and
// the next upgrade deletes it before it upgrades; neither leaves a journal.
func TestStoppedCorrectionIsNotResumed(t *testing.T) {
	env := testenv.New(t)
	d, _ := secretDeps(t, env, "berth test")
	ch, err := chart.Load(writeChart(t, map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"2\"}\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: env.Namespace, Chart: ch}); err != nil {
		t.Fatal(err)
	}
	killed := func() {
		t.Helper()
		id := resource.Identity{Kind: "ConfigMap", Namespace: env.Namespace, Name: "web-config"}
		j := &release.Journal{Release: "web", Operation: release.OpCorrect, Revision: 1, State: release.JournalRunning,
			Holder: "elsewhere/1/killed", Plan: &plan.Plan{Steps: []plan.Step{{ID: "apply/drifted", Action: plan.Apply, Objects: []resource.Identity{id}}}}}
		_, version, err := d.Journals.Read(ctx, "web")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Journals.Put(ctx, j, version); err != nil {
			t.Fatal(err)
		}
	}
	noJournal := func(after string) {
		t.Helper()
		if j, _, err := d.Journals.Read(ctx, "web"); err != nil || j != nil {
			t.Errorf("journal after %s: %+v (%v), want none", after, j, err)
		}
	}

	killed()
	nothing := func(context.Context, *release.Release) ([]*unstructured.Unstructured, error) { return nil, nil }
	if res, err := lifecycle.CorrectDrift(ctx, d, lifecycle.CorrectOptions{Name: "web", Find: nothing}); err != nil || len(res.Corrected) != 0 {
		t.Fatalf("correction over a killed one's journal: %+v, %v; want nothing corrected, no error", res, err)
	}
	noJournal("the next correction")

	killed()
	res, err := lifecycle.Upgrade(ctx, d, lifecycle.UpgradeOptions{Name: "web", Namespace: env.Namespace, Chart: ch})
	if err != nil || res.Release == nil || res.Release.Version != 2 || res.Release.Info.Status != release.StatusDeployed {
		t.Fatalf("upgrade over a killed correction's journal: %+v, %v; want revision 2 deployed", res, err)
	}
	if len(res.Actions) == 0 || res.Actions[0] != lifecycle.ActFinish {
		t.Errorf("actions of the upgrade: %v, want the journal dealt with first (finish), then the upgrade", res.Actions)
	}
	noJournal("the upgrade")
}
