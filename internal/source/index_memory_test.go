package source

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/allocs"
	"github.com/berthdev/berth/internal/yamlbound"
)

// bigIndex is a repository index of at least size bytes: charts of many versions, as a large
// public repository's.
func bigIndex(size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n")
	for c := 0; b.Len() < size; c++ {
		fmt.Fprintf(&b, "  chart%d:\n", c)
		for v := 0; v < 50 && b.Len() < size; v++ {
			fmt.Fprintf(&b, "  - apiVersion: v2\n    name: chart%d\n    version: 1.%d.0\n    appVersion: \"%d.0\"\n"+
				"    description: A chart that deploys something of a large catalogue, version %d\n"+
				"    created: \"2024-01-01T00:00:00Z\"\n    digest: %064d\n    urls:\n    - https://charts.example.com/chart%d-1.%d.0.tgz\n"+
				"    keywords: [web, server, catalogue]\n    maintainers:\n    - name: team\n      email: team@example.com\n",
				c, v, v, v, v, c, v)
		}
	}
	b.WriteString("generated: \"2024-01-01T00:00:00Z\"\n")
	return []byte(b.String())
}

// TestIndexParseMemory measures what parsing an index allocates, so that the controller's limit
// of an index (which it parses for tenants) holds its memory: at the limit, a parse allocates
// at most maxIndexAllocs.
func TestIndexParseMemory(t *testing.T) {
	for _, size := range []int{1 << 20, ManyTenantsMaxIndexBytes} {
		data := bigIndex(size)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		idx, err := parseIndex(data, "index.yaml", yamlbound.Tenant)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		allocated := after.TotalAlloc - before.TotalAlloc
		runtime.GC()
		runtime.ReadMemStats(&after)
		t.Logf("index of %d bytes (%d charts): parse allocated %d MiB, the index holds %d MiB", len(data), len(idx.Entries),
			allocated>>20, (int64(after.HeapAlloc)-int64(before.HeapAlloc))>>20)
		runtime.KeepAlive(idx)
		runtime.KeepAlive(data)
		if size == ManyTenantsMaxIndexBytes && allocated > maxIndexAllocs {
			t.Errorf("parsing an index of %d bytes allocated %d MiB, more than %d MiB", len(data), allocated>>20, maxIndexAllocs>>20)
		}
	}
}

const maxIndexAllocs = 200 << 20

// TestParseIndexRefusesAnAliasBomb: an index under the controller's limit whose aliases would
// expand it to 100 MiB is refused by its URL before Helm's loader expands them, having allocated
// a small multiple of its size.
func TestParseIndexRefusesAnAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  web:\n  - {name: web, version: 1.0.0, description: &d " + strings.Repeat("x", 1<<20) + "}\n")
	for v := 1; v <= 100; v++ {
		fmt.Fprintf(&b, "  - {name: web, version: 1.%d.0, description: *d}\n", v)
	}
	data := []byte(b.String())
	var err error
	alloc := allocs.Of(func() { _, err = parseIndex(data, "https://charts.example.com/index.yaml", yamlbound.Tenant) })
	var exp *ExpansionError
	if !errors.As(err, &exp) || exp.Where != "https://charts.example.com/index.yaml" || !errors.As(err, new(*yamlbound.ExpansionError)) {
		t.Fatalf("parseIndex: %v, want an *ExpansionError naming the index", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(yamlbound.Tenant.Bytes)) {
		t.Errorf("error %q does not say the limit", err)
	}
	if alloc > 16*int64(len(data)) {
		t.Errorf("refusing an index of %d bytes allocated %d bytes", len(data), alloc)
	}
}

// BenchmarkIndexCheck is what counting the aliases of the largest index the controller takes
// costs beside parsing it, when it holds anchors and aliases (without, the count is a scan for
// '&'): here, every version's keywords are an alias of the first's.
func BenchmarkIndexCheck(b *testing.B) {
	keywords := "keywords: [web, server, catalogue]"
	index := strings.Replace(string(bigIndex(ManyTenantsMaxIndexBytes)), keywords, "keywords: &k [web, server, catalogue]", 1)
	data := []byte(strings.ReplaceAll(index, keywords, "keywords: *k"))
	b.Run("count", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if err := yamlbound.Check(data, yamlbound.Tenant); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("count and parse", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseIndex(data, "index.yaml", yamlbound.Tenant); err != nil {
				b.Fatal(err)
			}
		}
	})
}
