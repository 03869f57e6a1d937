package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/cli/values"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"

	"github.com/berthdev/berth/internal/testenv"
)

// helmTemplate renders a chart with Helm's SDK the way `helm template` does (install action,
// client-only dry run) and prints the result as `helm template` prints it.
func helmTemplate(t *testing.T, name, namespace, chartPath, kubeVersion string, vals values.Options, isUpgrade, includeCRDs, skipTests bool) string {
	t.Helper()
	merged, err := vals.MergeValues(nil)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := loader.Load(chartPath)
	if err != nil {
		t.Fatal(err)
	}
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.Replace = true
	inst.ReleaseName, inst.Namespace = name, namespace
	inst.IsUpgrade, inst.IncludeCRDs = isUpgrade, includeCRDs
	if inst.KubeVersion, err = common.ParseKubeVersion(kubeVersion); err != nil {
		t.Fatal(err)
	}
	r, err := inst.RunWithContext(context.Background(), ch, merged)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	rel := r.(*releasev1.Release)
	var b strings.Builder
	fmt.Fprintln(&b, strings.TrimSpace(rel.Manifest))
	for _, h := range rel.Hooks {
		if skipTests && slices.Contains(h.Events, releasev1.HookTest) {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return b.String()
}

// randomName matches the random suffixes podinfo's test Pods get on every render.
var randomName = regexp.MustCompile(`-test-[a-z0-9]{5}\b`)

func maskRandom(s string) string { return randomName.ReplaceAllString(s, "-test-XXXXX") }

func repoChart(t *testing.T, parts ...string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

func TestTemplateErrors(t *testing.T) {
	app := repoChart(t, "internal", "chart", "testdata", "app")
	badTemplate := repoChart(t, "internal", "chart", "testdata", "badtemplate")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no chart", []string{"template"}, []string{"accepts between 1 and 2 arg(s)"}},
		{"too many arguments", []string{"template", "a", "b", "c"}, []string{"accepts between 1 and 2 arg(s)"}},
		{"nonexistent chart", []string{"template", "web", "no/such/chart"}, []string{"no/such/chart", "no such file or directory"}},
		{"malformed --set", []string{"template", "web", app, "--set", "a.b"}, []string{`--set "a.b"`, "has no value"}},
		{"generate-name with a name", []string{"template", "web", app, "-g"}, []string{"cannot set --generate-name and also specify a name"}},
		{"bad kube version", []string{"template", "web", app, "--kube-version", "latest"}, []string{`invalid kube version "latest"`}},
		{"show-only of a missing template", []string{"template", "web", app, "-s", "templates/none.yaml"}, []string{"could not find template templates/none.yaml in chart"}},
		{"template error", []string{"template", "web", badTemplate}, []string{"badtemplate/templates/cm.yaml:6", "nosuchfunc"}},
		{"invalid release name", []string{"template", "Web_1", app}, []string{`release name "Web_1"`}},
		{"name template with a name", []string{"template", "web", app, "--name-template", "x"}, []string{"cannot set --name-template and also specify a name"}},
		{"bad name template", []string{"template", app, "--name-template", "{{ nope"}, []string{`invalid --name-template "{{ nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := run(t, tt.args...)
			if err == nil {
				t.Fatalf("berth %s succeeded, want an error", strings.Join(tt.args, " "))
			}
			if stdout != "" {
				t.Errorf("printed %q on error", stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) || !strings.Contains(stderr, w) {
					t.Errorf("error %q (stderr %q) does not contain %q", err, stderr, w)
				}
			}
		})
	}
}
