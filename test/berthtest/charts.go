package berthtest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
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

// StartingDeployment is the template of a Deployment of one replica, with the annotations given
// (key, value, ...), whose Pod the local control plane makes Running and Ready after start
// (devcluster.berth.dev/start).
func StartingDeployment(name, start string, annotations ...string) string {
	var meta strings.Builder
	if len(annotations) > 0 {
		meta.WriteString("\n  annotations:")
		for i := 0; i+1 < len(annotations); i += 2 {
			fmt.Fprintf(&meta, "\n    %s: '%s'", annotations[i], annotations[i+1])
		}
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s%s
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata:
      labels: {app: %s}
      annotations: {devcluster.berth.dev/start: %q}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`, name, meta.String(), name, name, start)
}

// BeaconCRD is the format of a CustomResourceDefinition of Kind Beacon in the group it is
// formatted with, with a status subresource that nothing but a test writes: no controller makes
// a Beacon ready, and kstatus calls one without status ready.
const BeaconCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: beacons.%[1]s
spec:
  group: %[1]s
  names: {kind: Beacon, listKind: BeaconList, plural: beacons, singular: beacon}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// CRD is a CustomResourceDefinition of Kind kind (plural: kind in lower case, with an s) in
// group, of scope (Namespaced or Cluster), serving versions (the last one stored), each with a
// spec of the string fields given.
func CRD(kind, group, scope string, versions []string, fields ...string) string {
	plural := strings.ToLower(kind) + "s"
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]s.%[1]s
spec:
  group: %[1]s
  names: {kind: %[4]s, listKind: %[4]sList, plural: %[3]s, singular: %[5]s}
  scope: %[2]s
  versions:
`, group, scope, plural, kind, strings.ToLower(kind))
	for i, v := range versions {
		fmt.Fprintf(&b, `  - name: %s
    served: true
    storage: %t
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
`, v, i == len(versions)-1)
		for _, f := range fields {
			fmt.Fprintf(&b, "              %s: {type: string}\n", f)
		}
	}
	return b.String()
}
