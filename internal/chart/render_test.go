package chart

import (
	"context"
	"errors"
	"path/filepath"

	"helm.sh/helm/v4/pkg/chart/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"slices"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/resource"
)

func renderTestChart(t *testing.T, name string, vals map[string]any, opts RenderOptions) (*Rendered, error) {
	t.Helper()
	ch, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if opts.ReleaseName == "" {
		opts.ReleaseName = "rel"
	}
	return Render(context.Background(), ch, vals, opts)
}

func TestRender(t *testing.T) {
	caps, err := Capabilities("1.31.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := renderTestChart(t, "app", map[string]any{"greeting": "hi"}, RenderOptions{
		ReleaseName: "rel", Namespace: "ns", Revision: 4, IsUpgrade: true, Capabilities: caps,
	})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	wantResources := []string{"ServiceAccount/rel-app", "ConfigMap/rel-app", "Deployment.apps/rel-app", "Shirt.stable.example.com/rel-app"}
	if got := identities(r.Resources); !slices.Equal(got, wantResources) {
		t.Errorf("resources = %v, want %v", got, wantResources)
	}
	if !resource.IsKept(r.Resources[0]) {
		t.Errorf("%s is not kept", resource.IdentityOf(r.Resources[0]))
	}
	cm := r.Resources[1].Object["data"].(map[string]any)
	wantData := map[string]any{"greeting": "hi", "install": "false", "upgrade": "true", "revision": "4", "namespace": "ns", "kube": "v1.31.0"}
	for k, v := range wantData {
		if cm[k] != v {
			t.Errorf("ConfigMap data %s = %v, want %v", k, cm[k], v)
		}
	}
	var hooks []string
	for _, h := range r.Hooks {
		hooks = append(hooks, h.Identity.String())
	}
	wantHooks := []string{"ConfigMap/rel-app-hook-config", "Pod/rel-app-test", "Job.batch/rel-app-migrate"}
	if !slices.Equal(hooks, wantHooks) {
		t.Errorf("hooks = %v, want %v (Helm's kind order)", hooks, wantHooks)
	}
	migrate := r.Hooks[2]
	if migrate.Weight != 5 || !migrate.Has(resource.HookPreUpgrade) || !slices.Equal(migrate.DeletePolicies, []resource.DeletePolicy{resource.HookSucceeded}) {
		t.Errorf("migrate hook = %+v", migrate)
	}
	if !r.Hooks[1].Has(resource.HookTest) {
		t.Errorf("test-success hook events = %v, want test", r.Hooks[1].Events)
	}
	if len(r.ReleaseHooks) != 3 || r.ReleaseHooks[2].Path != "app/templates/hooks.yaml" {
		t.Errorf("release hooks = %v", hookList(r.ReleaseHooks))
	}
	if got := identities(r.CRDs); !slices.Equal(got, []string{"CustomResourceDefinition.apiextensions.k8s.io/shirts.stable.example.com"}) {
		t.Errorf("CRDs = %v", got)
	}
	if strings.Contains(r.Manifest, "CustomResourceDefinition") {
		t.Error("manifest holds the CRDs without IncludeCRDs")
	}
	if r.Notes != "rel says hi.\n" {
		t.Errorf("notes = %q", r.Notes)
	}
	if r.Values["replicas"] != float64(1) && r.Values["replicas"] != int64(1) && r.Values["replicas"] != 1 {
		t.Errorf("coalesced values = %v, want the chart's replicas default", r.Values)
	}
	if len(r.Config) != 1 || r.Config["greeting"] != "hi" {
		t.Errorf("config = %v, want only the user's values", r.Config)
	}
}

func TestRenderSubchartsAndCRDs(t *testing.T) {
	ch, err := Load("testdata/app")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	with, err := Render(ctx, ch, map[string]any{"sub": map[string]any{"enabled": true}}, RenderOptions{
		ReleaseName: "rel", IncludeCRDs: true, SubchartNotes: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(with.Manifest, "---\n# Source: app/crds/shirt.yaml\n") {
		t.Errorf("manifest with IncludeCRDs starts %q", with.Manifest[:60])
	}
	if !slices.Contains(identities(with.Resources), "ConfigMap/rel-sub") {
		t.Errorf("enabled subchart's ConfigMap missing from %v", identities(with.Resources))
	}
	if with.Notes != "rel says hello.\n\nsub is blue.\n" {
		t.Errorf("notes with subchart notes = %q", with.Notes)
	}
	// The chart must be unchanged by the first render: a second one with the subchart disabled
	// leaves it out, and a third with it enabled brings it back.
	without, err := Render(ctx, ch, nil, RenderOptions{ReleaseName: "rel"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(identities(without.Resources), "ConfigMap/rel-sub") {
		t.Error("disabled subchart rendered")
	}
	again, err := Render(ctx, ch, map[string]any{"sub": map[string]any{"enabled": true}}, RenderOptions{ReleaseName: "rel"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(identities(again.Resources), "ConfigMap/rel-sub") {
		t.Error("Render changed the chart: the subchart is gone after a render that disabled it")
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name  string
		chart string
		vals  map[string]any
		opts  RenderOptions
		want  []string
	}{
		{name: "template error", chart: "badtemplate", want: []string{"badtemplate/templates/cm.yaml:6", `function "nosuchfunc" not defined`}},
		{name: "invalid YAML", chart: "badyaml", want: []string{"badyaml/templates/cm.yaml: the rendered document is not valid YAML", "line 6"}},
		{name: "missing required value", chart: "required", want: []string{"required/templates/cm.yaml:6", "db.host is required"}},
		{name: "schema violation", chart: "app", vals: map[string]any{"replicas": "many"}, want: []string{"values don't meet the specifications of the schema", "replicas"}},
		{name: "library chart", chart: "library", want: []string{"chart library: library charts are not installable"}},
		{name: "bad hook weight", chart: "badweight", want: []string{"badweight/templates/job.yaml", "Job.batch/migrate", `"first" is not an integer`}},
		{name: "object without name", chart: "noname", want: []string{"noname/templates/cm.yaml", "ConfigMap has no metadata.name"}},
		{name: "bad release name", chart: "app", opts: RenderOptions{ReleaseName: "Not_Valid"}, want: []string{`release name "Not_Valid"`}},
		{
			name: "kube version too old", chart: "app",
			opts: RenderOptions{Capabilities: mustCapabilities(t, "1.19.0")},
			want: []string{"chart app requires kubeVersion"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderTestChart(t, tt.chart, tt.vals, tt.opts)
			if err == nil {
				t.Fatal("Render succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func mustCapabilities(t *testing.T, kubeVersion string) *common.Capabilities {
	t.Helper()
	caps, err := Capabilities(kubeVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	return caps
}

func identities(objs []*unstructured.Unstructured) []string {
	var ids []string
	for _, o := range objs {
		ids = append(ids, resource.IdentityOf(o).String())
	}
	return ids
}

func hookList(hooks []*release.Hook) string {
	var names []string
	for _, h := range hooks {
		names = append(names, h.Kind+"/"+h.Name+"("+h.Path+")")
	}
	return strings.Join(names, ", ")
}

// TestRenderedParsedHoldsTheManifest checks that reading the rendered manifest again through
// Parsed parses nothing new and gives what parsing it would, hidden Secrets and all.
func TestRenderedParsedHoldsTheManifest(t *testing.T) {
	for _, hide := range []bool{false, true} {
		r, err := renderTestChart(t, "app", map[string]any{"greeting": "hi"}, RenderOptions{Namespace: "ns", HideSecret: hide})
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		held := r.Parsed.Len()
		got, err := r.Parsed.Manifest(r.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		if r.Parsed.Len() != held {
			t.Errorf("hide %v: reading the manifest again parsed %d documents anew", hide, r.Parsed.Len()-held)
		}
		want, err := resource.ParseManifest(r.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("hide %v: %d objects, parsing gives %d", hide, len(got), len(want))
		}
		for i := range want {
			if !equality.Semantic.DeepEqual(got[i].Object, want[i].Object) {
				t.Errorf("hide %v: object %d = %v, parsing gives %v", hide, i, got[i].Object, want[i].Object)
			}
		}
	}
}

// A value that is also YAML syntax, rendered unquoted, breaks its manifest: the error names the
// template and never quotes the value, whichever way the value breaks it.
func TestRenderUnquotedValueNotQuoted(t *testing.T) {
	for _, v := range []string{"*Hunter2-s3cr3t", "Hunter2: s3cr3t", "[Hunter2-s3cr3t", "{Hunter2-s3cr3t: [1}", "&Hunter2-s3cr3t *Hunter2-s3cr3t"} {
		_, err := renderTestChart(t, "unquoted", map[string]any{"password": v}, RenderOptions{})
		if err == nil {
			t.Fatalf("%q: rendered", v)
		}
		if strings.Contains(err.Error(), "Hunter2") || strings.Contains(err.Error(), "s3cr3t") {
			t.Fatalf("%q: the error quotes the value: %v", v, err)
		}
		if !strings.Contains(err.Error(), "unquoted/templates/secret.yaml") {
			t.Fatalf("%q: the error does not name the template unquoted/templates/secret.yaml: %v", v, err)
		}
		if se := new(resource.SyntaxError); errors.As(err, &se) && se.Source != "unquoted/templates/secret.yaml" {
			t.Fatalf("%q: the error names %q", v, se.Source)
		}
	}
}
