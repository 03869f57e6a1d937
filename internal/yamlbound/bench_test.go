package yamlbound

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// index is a repository index of about size bytes, shaped as a large public one: many charts of
// many versions, each with its URLs, maintainers, keywords and annotations.
func index(size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for c := 0; b.Len() < size; c++ {
		fmt.Fprintf(&b, "  chart-%d:\n", c)
		for v := 0; v < 40 && b.Len() < size; v++ {
			fmt.Fprintf(&b, `  - annotations:
      category: Database
      images: |
        - name: app
          image: registry.example.com/app:1.%[2]d.0
      licenses: Apache-2.0
    apiVersion: v2
    appVersion: 1.%[2]d.0
    created: "2024-05-01T10:00:00.%[2]d+00:00"
    dependencies:
    - name: common
      repository: oci://registry.example.com/charts
      tags:
      - app-common
      version: 2.x.x
    description: A chart that deploys chart-%[1]d, with its database, cache and workers.
    digest: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab%04[2]d
    home: https://example.com/charts/chart-%[1]d
    icon: https://example.com/icons/chart-%[1]d.svg
    keywords:
    - chart-%[1]d
    - database
    maintainers:
    - name: Example
      url: https://github.com/example/charts
    name: chart-%[1]d
    sources:
    - https://github.com/example/charts/tree/main/chart-%[1]d
    urls:
    - https://charts.example.com/chart-%[1]d-1.%[2]d.0.tgz
    version: 1.%[2]d.0
`, c, v)
		}
	}
	b.WriteString("generated: \"2024-05-01T10:00:00Z\"\n")
	return []byte(b.String())
}

// document is the document benchmarked: $YAMLBOUND_BENCH_FILE, or an index of 4 MiB, the largest
// the controller takes.
func document(b *testing.B) []byte {
	if path := os.Getenv("YAMLBOUND_BENCH_FILE"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return data
	}
	return index(4 << 20)
}

// BenchmarkCheck is the cost Check adds to reading a document; BenchmarkConvert is the
// conversion it guards, for comparison.
func BenchmarkCheck(b *testing.B) {
	data := document(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(data, DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvert(b *testing.B) {
	data := document(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func TestIndexWithinManyTenantsLimits(t *testing.T) {
	data := index(4 << 20)
	size, err := Check(data, ManyTenantsLimits())
	if err != nil {
		t.Fatalf("an index of %d bytes: %v", len(data), err)
	}
	t.Logf("an index of %d bytes expands to %+v", len(data), size)
}
