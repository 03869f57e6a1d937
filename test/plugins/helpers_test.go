package plugins

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berthdev/berth/test/berthtest"
)

// getterPlugin writes a Helm v4 getter plugin (plugin.yaml of apiVersion v1, type getter/v1)
// named name for scheme into a new directory and returns the directory. Its command is the
// shell script body, run with the certificate, key and CA files and the URL as $1..$4.
func getterPlugin(t *testing.T, name, scheme, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	yaml := fmt.Sprintf(`apiVersion: v1
name: %s
type: getter/v1
runtime: subprocess
version: 0.1.0
sourceURL: https://example.com/%s
config:
  protocols: [%s]
runtimeConfig:
  protocolCommands:
  - protocols: [%s]
    platformCommand:
    - command: get.sh
`, name, name, scheme, scheme)
	write(t, filepath.Join(dir, "plugin.yaml"), yaml, 0o644)
	write(t, filepath.Join(dir, "get.sh"), "#!/bin/sh\n"+body+"\n", 0o755)
	return dir
}

// bucketPlugin is a getter plugin for scheme that serves SCHEME://PATH from root/PATH.
func bucketPlugin(t *testing.T, name, scheme, root string) string {
	t.Helper()
	return getterPlugin(t, name, scheme, fmt.Sprintf(`url="$4"; exec cat %q/"${url#%s://}"`, root, scheme))
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// bucketWithChart packages chart name 0.1.0 into root/bucket and returns root.
func bucketWithChart(t *testing.T, name string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bucket"), 0o755); err != nil {
		t.Fatal(err)
	}
	chart := berthtest.VersionedChart(t, name, "0.1.0", map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  from: bucket\n",
	})
	berthtest.PackageChart(t, chart, filepath.Join(root, "bucket"))
	return root
}

// mustBerth runs berth without a cluster and returns its stdout, failing the test when it fails.
func mustBerth(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := berthtest.RunBerth(t, args...)
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// berthFails runs berth without a cluster, expects it to fail, and returns its error message.
func berthFails(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := berthtest.RunBerth(t, args...)
	if err == nil {
		t.Fatalf("berth %s succeeded, want an error\n%s", strings.Join(args, " "), out)
	}
	return err.Error() + "\n" + stderr
}
