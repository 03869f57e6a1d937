package chart

import (
	"context"
	"io"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"helm.sh/helm/v4/pkg/action"
	kubefake "helm.sh/helm/v4/pkg/kube/fake"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// TestUpgradeValuesMatchesHelm upgrades a stored release with Helm's own upgrade action (client
// dry run, in-memory storage) under each values strategy, and checks that UpgradeValues followed
// by Render produces the same release.
func TestUpgradeValuesMatchesHelm(t *testing.T) {
	caps, err := Capabilities("1.31.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	prevConfig := map[string]any{"replicas": 2, "sub": map[string]any{"enabled": true}}
	tests := []struct {
		name     string
		strategy ValuesStrategy
		vals     map[string]any
	}{
		{"default, no values", ValuesDefault, nil},
		{"default, values", ValuesDefault, map[string]any{"greeting": "new"}},
		{"reset", ValuesReset, map[string]any{"greeting": "new"}},
		{"reuse", ValuesReuse, map[string]any{"greeting": "new"}},
		{"reset then reuse", ValuesResetThenReuse, map[string]any{"greeting": "new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The previous release's chart had other defaults than the new one.
			oldChart, err := Load("testdata/app")
			if err != nil {
				t.Fatal(err)
			}
			oldChart.Values["greeting"] = "old default"
			oldChart.Values["replicas"] = 7

			cfg := action.NewConfiguration()
			cfg.Releases = storage.Init(driver.NewMemory())
			cfg.KubeClient = &kubefake.PrintingKubeClient{Out: io.Discard}
			cfg.Capabilities = caps
			prev := &release.Release{
				Name: "rel", Namespace: "ns", Version: 1, Chart: oldChart, Config: prevConfig,
				Info: &release.Info{Status: rcommon.StatusDeployed},
			}
			if err := cfg.Releases.Create(prev); err != nil {
				t.Fatal(err)
			}
			up := action.NewUpgrade(cfg)
			up.Namespace = "ns"
			up.DryRunStrategy = action.DryRunClient
			up.ResetValues = tt.strategy == ValuesReset
			up.ReuseValues = tt.strategy == ValuesReuse
			up.ResetThenReuseValues = tt.strategy == ValuesResetThenReuse
			helmChart, err := Load("testdata/app")
			if err != nil {
				t.Fatal(err)
			}
			r, err := up.RunWithContext(context.Background(), "rel", helmChart, tt.vals)
			if err != nil {
				t.Fatalf("helm upgrade --dry-run=client: %v", err)
			}
			want := r.(*release.Release)

			newChart, err := Load("testdata/app")
			if err != nil {
				t.Fatal(err)
			}
			ch, vals, err := UpgradeValues(newChart, Previous{Chart: oldChart, Config: prevConfig}, tt.vals, tt.strategy)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(context.Background(), ch, vals, RenderOptions{
				ReleaseName: "rel", Namespace: "ns", Revision: 2, IsUpgrade: true, Capabilities: caps,
			})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got.Manifest != want.Manifest {
				t.Errorf("manifest differs from Helm's (-helm +berth):\n%s", cmp.Diff(want.Manifest, got.Manifest))
			}
			if !reflect.DeepEqual(got.ReleaseHooks, want.Hooks) {
				t.Errorf("hooks differ: got %s, want %s", hookList(got.ReleaseHooks), hookList(want.Hooks))
			}
			if !reflect.DeepEqual(got.Config, want.Config) {
				t.Errorf("config = %v, want Helm's %v", got.Config, want.Config)
			}
			if got.Notes != want.Info.Notes {
				t.Errorf("notes = %q, want Helm's %q", got.Notes, want.Info.Notes)
			}
		})
	}
}
