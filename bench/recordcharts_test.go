package main

import (
	"context"
	"testing"

	"github.com/berthdev/berth/internal/release"
)

// TestRecordChartsHaveTheirSize: the large-record chart's record, as Helm writes it, is
// kube-prometheus-stack's size and fits in a Secret; the huge-record chart's is about 3 MiB.
func TestRecordChartsHaveTheirSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		chart    string
		min, max int
	}{
		{"large-record", 700 << 10, 900 << 10},
		{"huge-record", 2800 << 10, 3300 << 10},
	}
	for _, tt := range tests {
		c, ok := chartByName(tt.chart)
		if !ok {
			t.Fatalf("no chart %q", tt.chart)
		}
		size, err := recordSizeOf(context.Background(), c, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: record %s as Helm writes it", tt.chart, release.Bytes(size))
		if size < tt.min || size > tt.max {
			t.Errorf("%s: record of %s, want %s to %s", tt.chart, release.Bytes(size), release.Bytes(tt.min), release.Bytes(tt.max))
		}
		r := render(t, c, 1, true)
		if len(r.Resources) != c.Objects {
			t.Errorf("%s renders %d objects, want %d", tt.chart, len(r.Resources), c.Objects)
		}
	}
}
