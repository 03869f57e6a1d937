// Package chartcmds holds end-to-end tests of berth's chart commands: create, lint, package and
// verify, each against Helm v4's own binary on the same charts, and a packaged chart installed
// on a local control plane.
package chartcmds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func mustBerth(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := berthtest.RunBerth(t, args...)
	if err != nil {
		t.Fatalf("berth %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

func mustHelm(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := berthtest.RunHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// tree returns the content of every file under dir, by path relative to dir.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for path := range berthtest.FileDigests(t, dir) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		files[rel] = string(b)
	}
	return files
}

// configMapChart writes a chart named name that installs one ConfigMap carrying its version and
// appVersion.
func configMapChart(t *testing.T, name string) string {
	t.Helper()
	return berthtest.VersionedChart(t, name, "0.1.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n" +
			"  version: {{ .Chart.Version | quote }}\n  appVersion: {{ .Chart.AppVersion | quote }}\n",
		"values.yaml": "greeting: hello\n",
	})
}
