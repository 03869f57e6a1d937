package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// TestLintMatchesHelm: berth lint prints what helm lint prints, and passes or fails with it, on
// the same charts and flags.
func TestLintMatchesHelm(t *testing.T) {
	t.Parallel()
	good := configMapChart(t, "good")
	broken := berthtest.WriteChart(t, "broken", map[string]string{
		"templates/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.missing.key }}\n",
	})
	noTemplates := berthtest.WriteChart(t, "warned", nil) // [WARNING] templates/: directory does not exist
	needsValue := berthtest.WriteChart(t, "needs", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.a.b | quote }}\n",
	})
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesFile, []byte("a:\n  b: from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kube := berthtest.WriteChart(t, "kube", map[string]string{
		"templates/cm.yaml": "{{ if eq .Capabilities.KubeVersion.Minor \"29\" }}{{ .Values.not.on129 }}{{ end }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	})
	parent := berthtest.WriteChart(t, "parent", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n- name: child\n  version: 0.1.0\n  repository: file://charts/child\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: parent\n",
		// Only linted on its own does the child warn that it has no templates.
		"charts/child/Chart.yaml": "apiVersion: v2\nname: child\nversion: 0.1.0\n",
	})
	tests := []struct {
		name     string
		args     []string
		wantFail bool
		want     string // in berth's output
	}{
		{name: "good", args: []string{good}},
		{name: "cannot render", args: []string{broken}, wantFail: true, want: "broken/templates/bad.yaml"},
		{name: "a warning passes", args: []string{noTemplates}, want: "[WARNING] templates/: directory does not exist"},
		{name: "a warning fails --strict", args: []string{"--strict", noTemplates}, wantFail: true},
		{name: "quiet on a good chart", args: []string{"--quiet", good}},
		{name: "quiet on a warning", args: []string{"--quiet", noTemplates}, want: "[WARNING]"},
		{name: "two charts, one broken", args: []string{good, broken}, wantFail: true},
		{name: "missing value", args: []string{needsValue}, wantFail: true, want: "nil pointer evaluating interface {}.b"},
		{name: "--set", args: []string{needsValue, "--set", "a.b=1"}},
		{name: "--set-string", args: []string{needsValue, "--set-string", "a.b=1"}},
		{name: "--set-json", args: []string{needsValue, "--set-json", `a={"b":"x"}`}},
		{name: "--values", args: []string{needsValue, "-f", valuesFile}},
		{name: "--kube-version", args: []string{kube, "--kube-version", "1.29.0"}, wantFail: true, want: "on129"},
		{name: "other --kube-version", args: []string{kube, "--kube-version", "1.31.0"}},
		{name: "subcharts not linted", args: []string{"--strict", parent}},
		{name: "--with-subcharts", args: []string{"--with-subcharts", "--strict", parent}, wantFail: true, want: "==> Linting " + filepath.Join(parent, "charts", "child") + "\n"},
		{name: "missing path", args: []string{filepath.Join(t.TempDir(), "nope")}, wantFail: true, want: "unable to check Chart.yaml file in chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"lint"}, tt.args...)
			helmOut, helmErr, helmFail := berthtest.RunHelm(t, args...)
			out, stderr, err := berthtest.RunBerth(t, args...)
			if (err != nil) != tt.wantFail || (helmFail != nil) != tt.wantFail {
				t.Errorf("berth lint: %v, helm lint: %v; want failure %v\nberth:\n%s%s\nhelm:\n%s%s", err, helmFail, tt.wantFail, out, stderr, helmOut, helmErr)
			}
			if diff := cmp.Diff(helmOut, out); diff != "" {
				t.Errorf("berth lint and helm lint print (-helm +berth):\n%s", diff)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("berth lint printed:\n%s\nwant %q in it", out, tt.want)
			}
			if tt.wantFail && !strings.Contains(stderr, "chart(s) linted, ") {
				t.Errorf("a failed berth lint said:\n%s", stderr)
			}
		})
	}
}
