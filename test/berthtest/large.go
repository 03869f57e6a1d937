package berthtest

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Noise returns n hex digits drawn from a generator seeded with seed: the same digits for the
// same seed and n, which compress to about half their length.
func Noise(seed uint64, n int) string {
	rnd := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(rnd.UintN(256))
	}
	return hex.EncodeToString(b)[:n]
}

// LargeChart writes a chart named name whose record, compressed, is about 3 MiB, more than a
// Secret holds, while its manifest is small: four Grafana-style dashboards of about 1 MB each in
// files/, and two CustomResourceDefinitions of group in crds/ (about 100 KB each, most of it in a
// description). Its templates are a ConfigMap named after the release, whose message is the
// value message, a Deployment of one replica that the local control plane starts, a test hook
// (a ConfigMap that only helm test would create) and notes that say the message.
func LargeChart(t testing.TB, name, group string) string {
	t.Helper()
	files := map[string]string{
		"values.yaml":           "message: hello\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  message: {{ .Values.message | quote }}\n  dashboards: {{ len (.Files.Glob \"files/*.json\") | quote }}\n",
		"templates/deploy.yaml": strings.ReplaceAll(StartingDeployment("RELEASE-app", "0s"), "RELEASE", "{{ .Release.Name }}"),
		"templates/test.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations: {helm.sh/hook: test}\ndata: {check: ok}\n",
		"templates/NOTES.txt":   "{{ .Release.Name }} says {{ .Values.message }}.\n",
	}
	for i := range 4 {
		files[fmt.Sprintf("files/dashboard-%d.json", i)] = dashboard(uint64(i), 1_000_000)
	}
	for i, kind := range []string{"Gauge", "Meter"} {
		files[fmt.Sprintf("crds/%s.yaml", strings.ToLower(kind))] = describedCRD(kind, group, Noise(100+uint64(i), 100_000))
	}
	return WriteChart(t, name, files)
}

// LargeManifestChart writes a chart named name whose manifest alone, compressed, is more than a
// Secret holds: four ConfigMaps named after the release, each holding one of files/ (500 KB of
// hex digits each), and a ConfigMap named after the release, whose message is the value message.
func LargeManifestChart(t testing.TB, name string) string {
	t.Helper()
	files := map[string]string{
		"values.yaml":           "message: hello\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  message: {{ .Values.message | quote }}\n",
		"templates/blobs.yaml":  "{{- range $path, $_ := .Files.Glob \"files/*.txt\" }}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ $.Release.Name }}-{{ base $path | trimSuffix \".txt\" }}\ndata:\n  blob: {{ $.Files.Get $path | quote }}\n{{- end }}\n",
	}
	for i := range 4 {
		files[fmt.Sprintf("files/blob-%d.txt", i)] = Noise(200+uint64(i), 500_000)
	}
	return WriteChart(t, name, files)
}

// NearLimitLines is the number of lines of NearLimitChart's catalog: as many as keep its record
// within a Secret at gzip's best compression but not at its default level.
const NearLimitLines = 151000

// NearLimitChart writes a chart named name whose values hold a catalog of lines (each one of a
// thousand distinct lines, drawn at random from a fixed seed) whose record compresses to about
// 9 KiB less than a Secret holds at gzip's best compression, and to about 9 KiB more at its
// default level: the best level's longer search for repeated lines is what keeps it in one
// Secret. Its one template is a ConfigMap named after the release with the catalog's length.
func NearLimitChart(t testing.TB, name string) string {
	t.Helper()
	return WriteChart(t, name, map[string]string{
		"values.yaml":       "catalog: |\n" + catalog(NearLimitLines),
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-catalog\ndata:\n  length: {{ len .Values.catalog | quote }}\n",
	})
}

// catalog is n lines, each one of a thousand distinct lines, as the lines of a YAML block
// scalar.
func catalog(n int) string {
	rnd := rand.New(rand.NewPCG(7, 7))
	pool := make([]string, 1000)
	for i := range pool {
		pool[i] = "          description: " + Noise(1000+uint64(i), 16) + "\n"
	}
	var b strings.Builder
	for range n {
		b.WriteString(pool[rnd.UintN(uint(len(pool)))])
	}
	return b.String()
}

// dashboard is a Grafana-style dashboard of about size bytes whose panels' descriptions are
// hex digits from seed.
func dashboard(seed uint64, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\"title\": \"dashboard %d\", \"panels\": [", seed)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  {\"id\": %d, \"type\": \"timeseries\", \"description\": %q}", i, Noise(seed<<16|uint64(i), 4000))
	}
	b.WriteString("\n]}\n")
	return b.String()
}

// describedCRD is a CustomResourceDefinition of a namespaced kind in group whose schema carries
// description.
func describedCRD(kind, group, description string) string {
	plural := strings.ToLower(kind) + "s"
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[3]s.%[1]s
spec:
  group: %[1]s
  names: {kind: %[2]s, listKind: %[2]sList, plural: %[3]s, singular: %[4]s}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: %[5]s
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, group, kind, plural, strings.ToLower(kind), description)
}
