package yamlbound

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Bounds of one Check on a document of n bytes, whatever it expands to: a parse allocates a
// node of some 200 bytes for every couple of bytes of the document at worst, and takes a time
// proportional to it. They are loose, so that they hold on a busy machine, and finite, so that a
// Check that expanded an alias would fail them by orders of magnitude.
func allocBound(n int) uint64       { return 1<<20 + 512*uint64(n) }
func timeBound(n int) time.Duration { return 2*time.Second + time.Duration(n)*20*time.Microsecond }

// FuzzCheck measures what any document expands to, and holds one call's allocation and time to
// a bound of the document's size, not of its expansion.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"", "a: b\n", `{"a": [1, 2, {"b": null}]}`, "a: &x [1, 2]\nb: *x\nc: {<<: *x}\n",
		"a: &a [&s xy, *s]\nb: [*a, *a, *s]\n", "a: b\n---\nc: d\n", laughs(9), laughs(40),
		bomb(1<<10, 100), "a: *unknown\n", "a: &x [*x]\n", ": not yaml [", "\t- a\n",
		strings.Repeat("[", 20) + strings.Repeat("]", 20),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		size, err := Check(data, ManyTenantsLimits())
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > allocBound(len(data)) {
			t.Errorf("Check of %d bytes allocated %d bytes, over %d", len(data), alloc, allocBound(len(data)))
		}
		if took > timeBound(len(data)) {
			t.Errorf("Check of %d bytes took %v, over %v", len(data), took, timeBound(len(data)))
		}
		var limit *LimitError
		var syntax *SyntaxError
		switch {
		case err == nil && (size.Nodes > ManyTenantsLimits().Nodes || size.Bytes > ManyTenantsLimits().Bytes):
			t.Errorf("Check passed a document of %+v, over the limits", size)
		case err != nil && !errors.As(err, &limit) && !errors.As(err, &syntax):
			t.Errorf("Check: %T %v, want a LimitError or a SyntaxError", err, err)
		case errors.As(err, &syntax) && strings.Contains(err.Error(), "yaml:"):
			t.Errorf("a syntax error quotes the parser: %v", err)
		}
	})
}
