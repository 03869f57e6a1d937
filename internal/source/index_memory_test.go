package source

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
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
		idx, err := parseIndex(data)
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
