package lifecycle

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/test/berthtest"
)

// flagsChart exercises what helm template's flags change: Capabilities, .Release, CRDs, hooks
// (one in a file with resources, two in one file), tests and a subchart.
var flagsChart = map[string]string{
	"values.yaml": "sub:\n  enabled: true\n",
	"Chart.yaml": `apiVersion: v2
name: shelf
version: 0.1.0
dependencies:
  - name: sub
    version: 0.1.0
    condition: sub.enabled
`,
	"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
	"crds/tools.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tools.example.com}
spec:
  group: example.com
  names: {kind: Tool, plural: tools}
  scope: Cluster
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-caps
  namespace: {{ .Release.Namespace }}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  install: {{ .Release.IsInstall | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
  group: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
  kind: {{ .Capabilities.APIVersions.Has "example.com/v1/Widget" | quote }}
---
apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-seed
  annotations: {helm.sh/hook: pre-install}
`,
	"templates/widget.yaml": `{{- if .Capabilities.APIVersions.Has "example.com/v1/Widget" }}
apiVersion: example.com/v1
kind: Widget
metadata: {name: {{ .Release.Name }}}
{{- end }}
`,
	"templates/hooks.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-migrate
  annotations: {helm.sh/hook: pre-install,pre-upgrade, helm.sh/hook-weight: "1"}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: example.invalid/m}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-done
  annotations: {helm.sh/hook: post-install}
`,
	"templates/tests/ping.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-ping
  annotations: {helm.sh/hook: test}
spec:
  containers: [{name: p, image: example.invalid/p}]
`,
	"templates/NOTES.txt":          "Shelf {{ .Release.Name }}\n",
	"charts/sub/Chart.yaml":        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
	"charts/sub/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}-sub}\n",
}

// TestTemplateFlagsMatchHelm runs helm template's flags through berth and Helm v4's binary on the
// same chart and expects the same output, the same files with --output-dir, and the same errors.
func TestTemplateFlagsMatchHelm(t *testing.T) {
	t.Parallel()
	chart := berthtest.WriteChart(t, "shelf", flagsChart)
	const kube = "1.31.4"
	tests := []struct {
		name string
		args []string
		// outputDir runs the command with --output-dir, twice when twice is set (hooks are
		// appended to the files the first run wrote).
		outputDir, twice bool
		// fails: both must fail with this error.
		fails string
	}{
		{name: "defaults", args: []string{"web", chart}},
		{name: "no name", args: []string{chart}},
		{name: "generate name", args: []string{chart, "-g"}},
		{name: "name template", args: []string{chart, "--name-template", `{{ printf "%s-%d" "shelf" 7 }}`}},
		{name: "namespace", args: []string{"web", chart, "-n", "stock"}},
		{name: "show only a file of resources and a hook", args: []string{"web", chart, "-s", "templates/cm.yaml"}},
		{name: "show only globs and a subchart", args: []string{"web", chart, "--show-only", "templates/tests/*", "-s", "charts/sub/templates/cm.yaml", "-s", "templates/h*.yaml"}},
		{name: "show only a missing template", args: []string{"web", chart, "-s", "templates/none.yaml"}, fails: "could not find template templates/none.yaml in chart"},
		{name: "show only a template that renders nothing", args: []string{"web", chart, "-s", "templates/widget.yaml"}, fails: "could not find template templates/widget.yaml in chart"},
		{name: "api versions", args: []string{"web", chart, "--api-versions", "example.com/v1", "--api-versions", "example.com/v1/Widget"}},
		{name: "api versions, comma-separated", args: []string{"web", chart, "-a", "example.com/v1,example.com/v1/Widget", "-s", "templates/widget.yaml"}},
		{name: "kube version", args: []string{"web", chart, "--kube-version", "v1.29.4"}},
		{name: "is upgrade", args: []string{"web", chart, "--is-upgrade"}},
		{name: "include CRDs", args: []string{"web", chart, "--include-crds"}},
		{name: "skip tests", args: []string{"web", chart, "--skip-tests"}},
		{name: "no hooks", args: []string{"web", chart, "--no-hooks"}},
		{name: "include CRDs, no hooks, skip tests, subchart off", args: []string{"web", chart, "--include-crds", "--no-hooks", "--skip-tests", "--set", "sub.enabled=false"}},
		{name: "output dir", args: []string{"web", chart}, outputDir: true},
		{name: "output dir, release name, CRDs, no tests", args: []string{"web", chart, "--release-name", "--include-crds", "--skip-tests"}, outputDir: true},
		{name: "output dir twice", args: []string{"web", chart, "--include-crds"}, outputDir: true, twice: true},
		{name: "output dir, show only", args: []string{"web", chart, "-s", "templates/cm.yaml"}, outputDir: true, fails: "could not find template templates/cm.yaml in chart"},
		{name: "name template and a name", args: []string{"web", chart, "--name-template", "x"}, fails: "cannot set --name-template and also specify a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"template"}, tt.args...)
			if !strings.Contains(strings.Join(tt.args, " "), "--kube-version") {
				args = append(args, "--kube-version", kube)
			}
			helmDir, berthDir := t.TempDir(), t.TempDir()
			runs := 1
			if tt.twice {
				runs = 2
			}
			var want, got, helmErr string
			var berthErr error
			for range runs {
				helmArgs, berthArgs := args, args
				if tt.outputDir {
					helmArgs = append(args[:len(args):len(args)], "--output-dir", helmDir)
					berthArgs = append(args[:len(args):len(args)], "--output-dir", berthDir)
				}
				var err error
				want, helmErr, err = berthtest.RunHelm(t, helmArgs...)
				if (err != nil) != (tt.fails != "") {
					t.Fatalf("helm %s: %v\n%s", strings.Join(helmArgs, " "), err, helmErr)
				}
				got, _, berthErr = berthtest.RunBerth(t, berthArgs...)
			}
			if tt.fails != "" {
				if berthErr == nil || !strings.Contains(berthErr.Error(), tt.fails) || !strings.Contains(helmErr, tt.fails) {
					t.Errorf("berth failed with %v, helm with %q; want both to say %q", berthErr, helmErr, tt.fails)
				}
			} else if berthErr != nil {
				t.Fatalf("berth %s: %v", strings.Join(args, " "), berthErr)
			}
			want = strings.ReplaceAll(want, helmDir, "OUT")
			got = strings.ReplaceAll(got, berthDir, "OUT")
			if got != want {
				t.Errorf("berth %s differs from helm's output:\n%s", strings.Join(args, " "), lineDiff(want, got))
			}
			if tt.fails == "" && !tt.outputDir && !strings.Contains(want, "# Source: shelf/") {
				t.Errorf("helm printed no template:\n%s", want)
			}
			if tt.outputDir {
				wantFiles, gotFiles := readTree(t, helmDir), readTree(t, berthDir)
				if len(wantFiles) == 0 {
					t.Fatal("helm wrote no file")
				}
				if diff := cmp.Diff(wantFiles, gotFiles); diff != "" {
					t.Errorf("--output-dir files differ (-helm +berth):\n%s", diff)
				}
			}
		})
	}
}

// readTree reads every file under dir, by path relative to dir.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lineDiff shows the first lines where got differs from want, with some context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(i-3, 0)
	var b strings.Builder
	b.WriteString("helm:\n")
	for _, l := range w[from:min(i+5, len(w))] {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("berth:\n")
	for _, l := range g[from:min(i+5, len(g))] {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
