package yamlbound

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/allocs"
)

// laughs is the billion laughs: n levels, each a list of ten aliases of the level below.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"lol\"]\n")
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

// bigString is a document of a string of n bytes and k aliases of it.
func bigString(n, k int) string {
	var b strings.Builder
	b.WriteString("s: &s " + strings.Repeat("x", n) + "\nlist:\n")
	for range k {
		b.WriteString("- *s\n")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	small := Limits{Nodes: 1000, Bytes: 10_000}
	for _, tc := range []struct {
		name    string
		doc     string
		measure string // "" when it passes
	}{
		{"no aliases", "a: 1\nb: [1, 2, 3]\n", ""},
		{"an ampersand and an asterisk in strings", "cron: '*/5 * * * *'\nq: 'a & b'\n", ""},
		{"a text larger than the limits, without aliases", "q:\n" + strings.Repeat("- 'rate(x[5m]) * 2 && y'\n", 2000), ""},
		{"a few aliases", "base: &b {x: 1, y: 2}\none: *b\ntwo: *b\n", ""},
		{"merge keys", "base: &b {x: 1}\none:\n  <<: *b\n  y: 2\n", ""},
		{"laughs, two levels", laughs(2), ""},
		{"laughs, nine levels", laughs(9), "nodes"},
		{"a string aliased past the bytes", bigString(1000, 20), "bytes"},
		{"a stream over the limit only together", strings.Repeat("---\n"+bigString(1000, 4), 4), "bytes"},
		{"nested anchors", "a: &a {b: &b [1, 2], c: *b}\nd: *a\ne: *b\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check([]byte(tc.doc), small)
			var exp *ExpansionError
			switch {
			case tc.measure == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.measure != "" && (!errors.As(err, &exp) || exp.Measure != tc.measure):
				t.Fatalf("Check: %v, want an *ExpansionError over the %s", err, tc.measure)
			}
			if tc.measure == "" {
				// What passes converts as usual.
				var v any
				if err := yaml.Unmarshal([]byte(tc.doc), &v); err != nil {
					t.Fatalf("convert: %v", err)
				}
			}
		})
	}
}

func TestCheckCycle(t *testing.T) {
	err := Check([]byte("a: &a [1, *a]\n"), Tenant)
	var cycle *CycleError
	if !errors.As(err, &cycle) || cycle.Anchor != "a" {
		t.Fatalf("Check: %v, want a *CycleError of anchor a", err)
	}
}

func TestCheckSyntaxQuotesNothing(t *testing.T) {
	err := Check([]byte("a: &a x\nb: *a\nc: [Hunter2-s3cr3t\n"), Tenant)
	var syntax *SyntaxError
	if !errors.As(err, &syntax) || syntax.Line == 0 {
		t.Fatalf("Check: %v, want a *SyntaxError with its line", err)
	}
	if strings.Contains(err.Error(), "Hunter2") {
		t.Errorf("Check: %q quotes the document", err)
	}
}

// TestCheckNamesTheBomb: the document that grew the controller to gigabytes, a 500 KiB string
// and 2,000 aliases of it, is refused by its bytes while it is counted.
func TestCheckNamesTheBomb(t *testing.T) {
	doc := []byte(bigString(500<<10, 2000))
	alloc := allocs.Of(func() {
		err := Check(doc, Tenant)
		var exp *ExpansionError
		if !errors.As(err, &exp) || exp.Measure != "bytes" {
			t.Errorf("Check: %v, want an *ExpansionError over the bytes", err)
		}
	})
	if alloc > 16*int64(len(doc)) {
		t.Errorf("Check of %d bytes allocated %d bytes", len(doc), alloc)
	}
}

// FuzzCheck: whatever the document, one check allocates a bounded multiple of its size and ends
// quickly; what it lets pass converts to JSON within the limits.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{laughs(3), laughs(7), bigString(100, 50), "a: &a [1, *a]", "base: &b {x: 1}\none: {<<: *b}\n", "---\na: &a 1\n---\nb: *a\n"} {
		f.Add([]byte(s))
	}
	limits := Limits{Nodes: 10_000, Bytes: 100_000}
	f.Fuzz(func(t *testing.T, doc []byte) {
		var err error
		start := time.Now()
		alloc := allocs.Of(func() { err = Check(doc, limits) })
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("Check of %d bytes took %v", len(doc), took)
		}
		if limit := int64(64<<10) + 200*int64(len(doc)); alloc > limit {
			t.Fatalf("Check of %d bytes allocated %d bytes, more than %d", len(doc), alloc, limit)
		}
		if err != nil {
			return
		}
		out, cerr := yaml.YAMLToJSON(doc)
		if cerr == nil && int64(len(out)) > 16*(limits.Bytes+limits.Nodes)+int64(len(doc))*4 {
			t.Fatalf("a document of %d bytes passed and converts to %d bytes of JSON", len(doc), len(out))
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	// A large values file with anchors: 20,000 entries, each with an alias of a shared map.
	var sb strings.Builder
	sb.WriteString("defaults: &d {cpu: 100m, memory: 128Mi, image: registry.example/app:1.2.3}\nservices:\n")
	for i := range 20_000 {
		fmt.Fprintf(&sb, "  svc%d: {resources: *d, port: %d, name: service-number-%d}\n", i, 8000+i%1000, i)
	}
	doc := []byte(sb.String())
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(doc, Local); err != nil {
			b.Fatal(err)
		}
	}
}
