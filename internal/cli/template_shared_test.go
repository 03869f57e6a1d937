//go:build sharedcharts

package cli

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"helm.sh/helm/v4/pkg/cli/values"
)

// The tests of this file render the real charts kept beside the repository in ../shared/charts
// (make test-shared).

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
