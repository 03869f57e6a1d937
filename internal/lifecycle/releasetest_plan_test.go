package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/lifecycle"
	"github.com/berthdev/berth/internal/release"
)

// TestTestRunsItsPlan runs a release's tests on a fake cluster: the run is one plan, the tests
// the filters select and then their record, executed step by step and journaled, and its journal
// is gone once it ended; the record holds each test's last run.
func TestTestRunsItsPlan(t *testing.T) {
	ctx := t.Context()
	ch, err := chart.Load(writeChart(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: tested\nversion: 0.1.0\n",
		"templates/tests.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: first
  annotations: {helm.sh/hook: test}
---
apiVersion: v1
kind: Pod
metadata:
  name: skipped
  annotations: {helm.sh/hook: test, helm.sh/hook-weight: "1"}
---
apiVersion: v1
kind: Pod
metadata:
  name: second
  annotations: {helm.sh/hook: test, helm.sh/hook-weight: "2", helm.sh/hook-delete-policy: hook-succeeded}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	seen := &steps{}
	journals := &memoryJournals{}
	d := lifecycle.Deps{
		Cluster: newFakeCluster(), Store: release.NewMemoryStore("team"), Namespaces: fakeNamespaces{}, Journals: journals,
		Events: seen.event, Now: time.Now, Holder: release.Holder{Identity: "test"},
	}
	if _, err := lifecycle.Install(ctx, d, lifecycle.InstallOptions{Name: "web", Namespace: "team", Chart: ch}); err != nil {
		t.Fatal(err)
	}
	seen.take()
	writes := journals.writes

	o := lifecycle.TestOptions{Name: "web"}
	o.AddFilter("!name=skipped")
	res, err := lifecycle.Test(ctx, d, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 {
		t.Fatalf("%d runs, want the test run's one", len(res.Runs))
	}
	p := res.Runs[0].Plan
	want := []string{"hooks/test", "record/tested/1"}
	if diff := cmp.Diff(want, stepIDs(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, seen.take()); diff != "" {
		t.Errorf("executed steps (-want +got):\n%s", diff)
	}
	if r := p.Steps[0].Reason; !strings.Contains(r, ": first weight 0") || !strings.Contains(r, "; second weight 2, delete hook-succeeded") || strings.Contains(r, "skipped") {
		t.Errorf("the tests step says %q, want the selected tests in order", r)
	}
	if journals.writes == writes {
		t.Error("the test run wrote no journal")
	}
	if j, _ := journals.Get(ctx, "web"); j != nil {
		t.Errorf("the test run left its journal: %+v", j)
	}
	rel, err := d.Store.Last(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	phases := map[string]string{}
	for _, h := range rel.Hooks {
		phases[h.Name] = string(h.LastRun.Phase)
	}
	if diff := cmp.Diff(map[string]string{"first": "Succeeded", "skipped": "", "second": "Succeeded"}, phases); diff != "" {
		t.Errorf("recorded runs (-want +got):\n%s", diff)
	}
	if rel.Info.Status != release.StatusDeployed {
		t.Errorf("the test run left the revision %s, want it still deployed", rel.Info.Status)
	}
}
