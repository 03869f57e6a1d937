package berthtest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
)

// SharedChart returns the path of one of the real charts kept beside the repository, in
// ../shared/charts (podinfo, ingress-nginx). Tests must not write to it.
func SharedChart(t testing.TB, name string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "..", "shared", "charts", name)
}

// WriteChart writes a chart named name into a new directory under t.TempDir() and returns its
// path: a Chart.yaml for name (version 0.1.0) and files, by path relative to the chart
// (templates/x.yaml, crds/y.yaml, values.yaml). files may replace Chart.yaml.
func WriteChart(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	all := map[string]string{"Chart.yaml": fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name)}
	maps.Copy(all, files)
	for path, content := range all {
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
