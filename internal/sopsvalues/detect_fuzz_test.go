package sopsvalues_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthdev/berth/internal/allocs"
	"github.com/berthdev/berth/internal/sopsvalues"
	"github.com/berthdev/berth/internal/yamlbound"
	"github.com/berthdev/berth/test/berthtest"
)

const fuzzMeta = "sops:\n  mac: ENC[AES256_GCM,data:x,iv:y,tag:z,type:str]\n  lastmodified: \"2026-01-01T00:00:00Z\"\n"

// FuzzDetect reads any document as a tenant may write one, seeded with documents the real sops
// CLI encrypted: Detect costs time and memory in proportion to the document's text, whatever its
// aliases expand to (the controller asks it of every values key, before any other bound), and
// EncryptedPaths in proportion to what the document becomes once its aliases are expanded
// (its callers bound that first); the paths it names are never of the sops metadata.
func FuzzDetect(f *testing.F) {
	key := berthtest.NewAgeKey(f)
	f.Add(berthtest.SOPSEncryptCLI(f, []byte(cliYAML), "yaml", key.Recipient))
	f.Add(berthtest.SOPSEncryptCLIArgs(f, []byte(cliJSON), "json", []string{"--encrypted-regex", "^password$"}, key.Recipient))
	f.Add([]byte(fuzzMeta + "a: &a ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\nb: [*a, *a]\nc: {d: *a}\n"))
	f.Add([]byte("m: &m {mac: x, lastmodified: y}\nsops: *m\n"))
	f.Add([]byte(fuzzMeta + "s: &s " + strings.Repeat("x", 20_000) + "\nlist:\n" + strings.Repeat("- *s\n", 2_000)))
	f.Add([]byte(fuzzMeta + laughs(6)))
	f.Add([]byte("sops: {mac: 1, lastmodified: null}\n"))
	f.Add([]byte("- sops\n"))
	// EncryptedPaths is measured on documents within these, as the controller checks
	// yamlbound.Tenant first.
	limits := yamlbound.Limits{Nodes: 10_000, Bytes: 100_000}
	f.Fuzz(func(t *testing.T, data []byte) {
		var format sopsvalues.Format
		var ok bool
		start := time.Now()
		alloc := allocs.Of(func() { format, ok = sopsvalues.Detect(data) })
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Detect of %d bytes took %v", len(data), took)
		}
		if limit := int64(64<<10) + 400*int64(len(data)); alloc > limit {
			t.Fatalf("Detect of %d bytes allocated %d bytes, more than %d", len(data), alloc, limit)
		}
		if ok != (format == sopsvalues.YAML || format == sopsvalues.JSON) {
			t.Fatalf("Detect = %q, %t", format, ok)
		}
		if yamlbound.Check(data, limits) != nil {
			return
		}
		var paths []sopsvalues.Path
		start = time.Now()
		alloc = allocs.Of(func() { paths = sopsvalues.EncryptedPaths(data) })
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("EncryptedPaths of %d bytes took %v", len(data), took)
		}
		if limit := int64(64<<10) + 400*int64(len(data)) + 16*limits.Bytes + 2048*limits.Nodes; alloc > limit {
			t.Fatalf("EncryptedPaths of %d bytes allocated %d bytes, more than %d", len(data), alloc, limit)
		}
		for _, p := range paths {
			if len(p) == 0 || p[0] == "sops" {
				t.Fatalf("EncryptedPaths names %q", p)
			}
		}
	})
}

// laughs is a document of n levels, each a list of ten aliases of the level below: 10^n
// values once expanded.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"ENC[AES256_GCM,data:AA==,iv:AA==,tag:AA==,type:str]\"]\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}
