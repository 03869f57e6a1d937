package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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

func TestTemplateMatchesHelm(t *testing.T) {
	podinfo := repoChart(t, "..", "shared", "charts", "podinfo")
	ingress := repoChart(t, "..", "shared", "charts", "ingress-nginx")
	app := repoChart(t, "internal", "chart", "testdata", "app")
	tests := []struct {
		name       string
		chart      string
		vals       values.Options
		args       []string
		upgrade    bool
		crds       bool
		skipTests  bool
		noNameArgs bool
	}{
		{name: "podinfo defaults", chart: podinfo},
		{
			name: "podinfo values, hooks, skip tests, upgrade", chart: podinfo,
			vals:    values.Options{Values: []string{"replicaCount=3,hpa.enabled=true"}, StringValues: []string{"hooks.preInstall.job.enabled=true"}},
			args:    []string{"--set", "replicaCount=3,hpa.enabled=true", "--set-string", "hooks.preInstall.job.enabled=true", "--skip-tests", "--is-upgrade"},
			upgrade: true, skipTests: true,
		},
		{
			name: "podinfo values file", chart: podinfo,
			vals: values.Options{ValueFiles: []string{filepath.Join(podinfo, "values-prod.yaml")}},
			args: []string{"-f", filepath.Join(podinfo, "values-prod.yaml")},
		},
		{
			name: "ingress-nginx daemonset", chart: ingress,
			vals: values.Options{Values: []string{"controller.kind=DaemonSet"}, JSONValues: []string{`controller.nodeSelector={"disk":"ssd"}`}},
			args: []string{"--set", "controller.kind=DaemonSet", "--set-json", `controller.nodeSelector={"disk":"ssd"}`},
		},
		{
			name: "CRDs and subchart, default release name", chart: app, noNameArgs: true, crds: true,
			vals: values.Options{LiteralValues: []string{"greeting=a,b"}, Values: []string{"sub.enabled=true"}},
			args: []string{"--include-crds", "--set-literal", "greeting=a,b", "--set", "sub.enabled=true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "web"
			args := []string{"template", name, tt.chart}
			if tt.noNameArgs {
				name = "release-name"
				args = []string{"template", tt.chart}
			}
			args = append(args, "-n", "shop", "--kube-version", "1.33.2")
			args = append(args, tt.args...)
			want := helmTemplate(t, name, "shop", tt.chart, "1.33.2", tt.vals, tt.upgrade, tt.crds, tt.skipTests)
			stdout, stderr, err := run(t, args...)
			if err != nil {
				t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, stderr)
			}
			if maskRandom(stdout) != maskRandom(want) {
				t.Errorf("berth %s differs from helm template (-helm +berth):\n%s", strings.Join(args, " "), cmp.Diff(maskRandom(want), maskRandom(stdout)))
			}
		})
	}
}

func TestTemplateShowOnly(t *testing.T) {
	podinfo := repoChart(t, "..", "shared", "charts", "podinfo")
	stdout, _, err := run(t, "template", "web", podinfo, "--kube-version", "1.33.2", "-s", "templates/service.yaml", "--show-only", "templates/tests/*")
	if err != nil {
		t.Fatal(err)
	}
	sources := regexp.MustCompile(`(?m)^# Source: (.*)$`).FindAllStringSubmatch(stdout, -1)
	var got []string
	for _, s := range sources {
		got = append(got, s[1])
	}
	want := []string{
		"podinfo/templates/service.yaml",
		"podinfo/templates/tests/grpc.yaml", "podinfo/templates/tests/jwt.yaml", "podinfo/templates/tests/service.yaml",
	}
	if !slices.Equal(got, want) {
		t.Errorf("--show-only printed %v, want %v", got, want)
	}
	if !strings.HasPrefix(stdout, "---\n# Source: podinfo/templates/service.yaml\napiVersion: v1\nkind: Service\n") {
		t.Errorf("--show-only output starts %q", stdout[:min(len(stdout), 80)])
	}
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
