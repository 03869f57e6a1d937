//go:build sharedcharts

package chart

import (
	"context"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/resource"
)

// sharedChart returns the path of one of the real charts in ../shared/charts.
func sharedChart(t *testing.T, name string) string {
	t.Helper()
	// The package's tests run in internal/chart: the repository is two levels up.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "..", "shared", "charts", name)
}

// helmInstallDryRun renders chartPath with Helm's own install action in client-only dry-run
// mode, which is what `helm template` does.
func helmInstallDryRun(t *testing.T, chartPath string, vals map[string]any, opts RenderOptions) *release.Release {
	t.Helper()
	loaded, err := loader.Load(chartPath)
	if err != nil {
		t.Fatalf("helm load %s: %v", chartPath, err)
	}
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.Replace = true
	inst.ReleaseName = opts.ReleaseName
	inst.Namespace = opts.Namespace
	inst.IncludeCRDs = opts.IncludeCRDs
	inst.IsUpgrade = opts.IsUpgrade
	if opts.Capabilities != nil {
		kv := opts.Capabilities.KubeVersion
		inst.KubeVersion = &kv
		inst.APIVersions = opts.Capabilities.APIVersions[len(common.DefaultCapabilities.APIVersions):]
	}
	rel, err := inst.RunWithContext(context.Background(), loaded, vals)
	if err != nil {
		t.Fatalf("helm install --dry-run=client %s: %v", chartPath, err)
	}
	return rel.(*release.Release)
}

func TestRenderMatchesHelm(t *testing.T) {
	caps, err := Capabilities("v1.33.2", []string{"monitoring.coreos.com/v1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		chart   string
		name    string
		vals    ValueOptions
		upgrade bool
		crds    bool
	}{
		{chart: "podinfo", name: "defaults"},
		{chart: "podinfo", name: "replicas and hpa", vals: ValueOptions{Values: []string{"replicaCount=3,hpa.enabled=true"}}},
		{chart: "podinfo", name: "ingress, monitor, hooks, redis", vals: ValueOptions{
			Values:       []string{"ingress.enabled=true,serviceMonitor.enabled=true,redis.enabled=true"},
			StringValues: []string{"hooks.preInstall.job.enabled=true,hooks.postDelete.job.enabled=true"},
		}},
		{chart: "podinfo", name: "prod values file", vals: ValueOptions{ValueFiles: []string{"values-prod.yaml"}}},
		{chart: "ingress-nginx", name: "defaults"},
		{chart: "ingress-nginx", name: "daemonset", vals: ValueOptions{Values: []string{"controller.kind=DaemonSet"}}},
		{chart: "ingress-nginx", name: "no webhooks, metrics", vals: ValueOptions{
			Values: []string{"controller.admissionWebhooks.enabled=false,controller.metrics.enabled=true"},
		}},
		{chart: "ingress-nginx", name: "is upgrade", upgrade: true},
		{chart: "testdata/app", name: "crds, subchart, hooks", crds: true, vals: ValueOptions{Values: []string{"sub.enabled=true"}}},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.name, func(t *testing.T) {
			path := tt.chart
			if !strings.HasPrefix(path, "testdata/") {
				path = sharedChart(t, tt.chart)
			}
			for i, f := range tt.vals.ValueFiles {
				tt.vals.ValueFiles[i] = filepath.Join(path, f)
			}
			vals, err := tt.vals.Merge()
			if err != nil {
				t.Fatal(err)
			}
			opts := RenderOptions{ReleaseName: "web", Namespace: "shop", Capabilities: caps, IsUpgrade: tt.upgrade, IncludeCRDs: tt.crds}
			want := helmInstallDryRun(t, path, vals, opts)

			ch, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Render(context.Background(), ch, vals, opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if got.Manifest != want.Manifest {
				t.Errorf("manifest differs from Helm's (-helm +berth):\n%s", cmp.Diff(want.Manifest, got.Manifest))
			}
			if got.Notes != want.Info.Notes {
				t.Errorf("notes differ from Helm's (-helm +berth):\n%s", cmp.Diff(want.Info.Notes, got.Notes))
			}
			// podinfo's test Pods have random names (randAlphaNum), different on every render.
			maskRandomNames(got.ReleaseHooks)
			maskRandomNames(want.Hooks)
			if !reflect.DeepEqual(got.ReleaseHooks, want.Hooks) {
				t.Errorf("hooks differ from Helm's:\n got  %s\n want %s", hookList(got.ReleaseHooks), hookList(want.Hooks))
			}
			if !reflect.DeepEqual(got.Config, want.Config) {
				t.Errorf("config = %v, want Helm's %v", got.Config, want.Config)
			}
			if len(got.Hooks) != len(got.ReleaseHooks) {
				t.Errorf("%d parsed hooks for %d release hooks", len(got.Hooks), len(got.ReleaseHooks))
			}
			wantResources, err := resource.ParseManifest(want.Manifest)
			if err != nil {
				t.Fatal(err)
			}
			gotResources := got.Resources
			if tt.crds { // with IncludeCRDs the manifest starts with the crds/ files
				gotResources = append(slices.Clone(got.CRDs), got.Resources...)
			}
			if g, w := identities(gotResources), identities(wantResources); !slices.Equal(g, w) {
				t.Errorf("resources\n got  %v\n want %v", g, w)
			}
		})
	}
}

var randomTestName = regexp.MustCompile(`-test-[a-z0-9]{5}\b`)

func maskRandomNames(hooks []*release.Hook) {
	for _, h := range hooks {
		h.Name = randomTestName.ReplaceAllString(h.Name, "-test-XXXXX")
		h.Manifest = randomTestName.ReplaceAllString(h.Manifest, "-test-XXXXX")
	}
}
