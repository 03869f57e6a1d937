package release

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"helm.sh/helm/v4/pkg/storage/driver"
)

// TestSplitRecordRewrittenByHelm: Helm's driver rewrites a record object to change its status
// (helm rollback and helm upgrade supersede the deployed revision, helm uninstall --keep-history
// marks it uninstalled), keeping its labels and dropping its annotations; and helm rollback
// writes a new revision, whole, with the labels of the one it rolls back to. The store still
// reads the rewritten record whole, with its parts, and the new revision as helm wrote it.
func TestSplitRecordRewrittenByHelm(t *testing.T) {
	for _, tc := range []struct {
		name           string
		chart, mfst    int
		storeConfigMap bool
	}{
		{name: "chart", chart: 3 << 20, mfst: 1 << 10},
		{name: "manifest", chart: 1 << 20, mfst: 4 << 20},
		{name: "configmap", chart: 1 << 20, mfst: 4 << 20, storeConfigMap: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientset().CoreV1()
			store := func() *HelmStore {
				if tc.storeConfigMap {
					return NewConfigMapStore(c, "ns")
				}
				return NewSecretStore(c, "ns")
			}
			var helm driver.Driver = driver.NewSecrets(c.Secrets("ns"))
			if tc.storeConfigMap {
				helm = driver.NewConfigMaps(c.ConfigMaps("ns"))
			}
			r := large("ns", "big", 1, tc.chart, tc.mfst)
			if err := store().Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			r.Info.Status = StatusSuperseded
			want := jsonOf(t, r)

			hr, err := helm.Get(Key("big", 1))
			if err != nil {
				t.Fatal(err)
			}
			h, _ := toV1(hr)
			h.Info.Status = StatusSuperseded
			if err := helm.Update(Key("big", 1), h); err != nil {
				t.Fatal(err)
			}
			it, err := store().records("ns").get(ctx, Key("big", 1))
			if err != nil {
				t.Fatal(err)
			}
			if a, ok := it.annotations[PartsAnnotation]; ok {
				t.Fatalf("Helm's driver kept %s %q: the test does not test its rewrite", PartsAnnotation, a)
			}

			back, err := store().Get(ctx, "big", 1)
			if err != nil {
				t.Fatalf("read the record Helm rewrote: %v", err)
			}
			back.Labels = r.Labels
			if got := jsonOf(t, back); got != want {
				t.Errorf("the record Helm rewrote does not read back whole: %.300q", got)
			}

			// helm rollback to 1: revision 2 is revision 1 as Helm's driver reads it, with its
			// labels, written whole.
			h2 := *h
			h2.Version, h2.Info.Status = 2, StatusDeployed
			if err := helm.Create(Key("big", 2), &h2); err != nil {
				t.Fatal(err)
			}
			last, err := store().Last(ctx, "big")
			if err != nil {
				t.Fatalf("read helm's revision 2: %v", err)
			}
			if last.Version != 2 || last.Manifest != h.Manifest || len(last.Chart.Templates) != 0 {
				t.Errorf("helm's revision 2 reads as revision %d with %d templates", last.Version, len(last.Chart.Templates))
			}
			if history, err := store().History(ctx, "big"); err != nil || len(history) != 2 {
				t.Errorf("history: %d revisions (%v), want 2", len(history), err)
			}

			// berth supersedes helm's revision 2 and records revision 3, split, from revision 1:
			// the label copied from revision 1 names revision 3's parts.
			r3 := large("ns", "big", 3, tc.chart, tc.mfst)
			r3.Labels = last.Labels
			if err := store().Create(ctx, r3); err != nil {
				t.Fatal(err)
			}
			if got, err := store().Get(ctx, "big", 3); err != nil || len(got.Chart.Templates) != 4 {
				t.Errorf("revision 3: %v", err)
			}
			if _, err := store().Prune(ctx, "big", 1); err != nil {
				t.Fatal(err)
			}
			parts, err := store().records("ns").list(ctx, partsSelector("big"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				if p.labels["version"] != "3" {
					t.Errorf("part %s of revision %s is left after pruning to revision 3", p.name, p.labels["version"])
				}
			}
		})
	}
}
