package lifecycle

import (
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// withSedPlugin installs, in a new HELM_PLUGINS directory, a postrenderer/v1 plugin "sed" that
// replaces FOOTEST with its arguments (BARTEST without any). The test must not run in parallel.
func withSedPlugin(t *testing.T) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "plugins")
	files := map[string]string{
		"sed/plugin.yaml": `name: sed
version: 0.1.0
type: postrenderer/v1
apiVersion: v1
runtime: subprocess
runtimeConfig:
  platformCommand:
  - command: "${HELM_PLUGIN_DIR}/sed.sh"
`,
		"sed/sed.sh": "#!/bin/sh\nif [ $# -eq 0 ]; then sed s/FOOTEST/BARTEST/g; else sed s/FOOTEST/\"$*\"/g; fi\n",
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HELM_PLUGINS", dir)
}

var postRenderChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: rendered\nversion: 0.1.0\n",
	"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: FOOTEST
`,
	"templates/hook.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: hooked
  annotations:
    helm.sh/hook: pre-install
data:
  color: FOOTEST
`,
}

// TestPostRenderer runs a postrenderer/v1 plugin on template, install and upgrade as helm does:
// template prints what helm template prints, and the objects applied are the rewritten ones.
func TestPostRenderer(t *testing.T) {
	withSedPlugin(t)
	env := testenv.New(t)
	chart := berthtest.WriteChart(t, "rendered", postRenderChart)

	args := []string{"template", "web", chart, "--post-renderer", "sed", "--post-renderer-args", "blue"}
	want, stderr, err := berthtest.RunHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr)
	}
	got, _, err := berthtest.RunBerth(t, args...)
	if err != nil {
		t.Fatalf("berth %v: %v", args, err)
	}
	if got != want {
		t.Errorf("berth template --post-renderer printed\n%s\nhelm template printed\n%s", got, want)
	}

	color := func() string {
		t.Helper()
		cm, err := env.Client.CoreV1().ConfigMaps(env.Namespace).Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get ConfigMap settings: %v", err)
		}
		return cm.Data["color"]
	}
	berthtest.MustBerth(t, env, "install", "web", chart, "--post-renderer", "sed", "--post-renderer-args", "blue")
	if got := color(); got != "blue" {
		t.Errorf("after install with the post-renderer: color %q, want blue", got)
	}
	berthtest.MustBerth(t, env, "upgrade", "web", chart, "--post-renderer", "sed")
	if got := color(); got != "BARTEST" {
		t.Errorf("after upgrade with the post-renderer: color %q, want BARTEST", got)
	}

	if _, _, err := berthtest.Berth(t, env, "upgrade", "web", chart, "--post-renderer", "nosuch"); err == nil {
		t.Error("upgrade with a post-renderer plugin that does not exist succeeded")
	}
	if got := color(); got != "BARTEST" {
		t.Errorf("a refused upgrade changed color to %q", got)
	}
}
