package yamlbound

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// laughs is the billion-laughs shape: levels anchors, each a list of ten aliases of the one
// before.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("a0: &a0 lol\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// bomb is the values document of a tenant: a string of size bytes and n aliases of it.
func bomb(size, n int) string {
	var b strings.Builder
	b.WriteString("big: &big " + strings.Repeat("x", size) + "\nmany:\n")
	for i := 0; i < n; i++ {
		b.WriteString("- *big\n")
	}
	return b.String()
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		limits  Limits
		want    Size
		measure string // of the *LimitError wanted, "" for none
	}{
		{name: "empty", doc: "", want: Size{}},
		{name: "scalar", doc: "hello", want: Size{Nodes: 1, Bytes: 5}},
		{name: "map", doc: "a: b\nc: dd\n", want: Size{Nodes: 5, Bytes: 5}},
		{name: "json", doc: `{"a": ["b", "c"]}`, want: Size{Nodes: 5, Bytes: 3}},
		{name: "alias in a map", doc: "a: &x abc\nb: *x\nc: *x\n", want: Size{Nodes: 7, Bytes: 12}},
		{name: "alias in a sequence", doc: "- &x {k: vv}\n- *x\n- *x\n", want: Size{Nodes: 10, Bytes: 9}},
		{name: "merge key", doc: "base: &b {k: v, l: w}\nx:\n  <<: *b\n  m: n\n", want: Size{Nodes: 17, Bytes: 17}},
		{name: "nested anchors", doc: "a: &a [&s xy, *s]\nb: [*a, *a, *s]\n", want: Size{Nodes: 14, Bytes: 16}},
		{name: "stream", doc: "a: b\n---\nc: d\n---\n", want: Size{Nodes: 7, Bytes: 4}},
		{name: "stream over the limit together", doc: "a: b\n---\nc: d\n", limits: Limits{Nodes: 5}, want: Size{Nodes: 6, Bytes: 4}, measure: "nodes"},
		{name: "billion laughs", doc: laughs(9), limits: ManyTenantsLimits(), want: Size{Nodes: 1111111119 + 9, Bytes: 3000000000 + 36}, measure: "nodes"},
		{name: "laughs past int64", doc: laughs(30), limits: ManyTenantsLimits(), want: Size{Nodes: math.MaxInt64, Bytes: math.MaxInt64}, measure: "nodes"},
		{name: "string bomb", doc: bomb(500<<10, 2000), limits: Limits{Bytes: 16 << 20}, want: Size{Nodes: 2005, Bytes: 2001*(500<<10) + 7}, measure: "bytes"},
		{name: "within limits", doc: bomb(10, 10), limits: ManyTenantsLimits(), want: Size{Nodes: 15, Bytes: 117}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check([]byte(tt.doc), tt.limits)
			if tt.measure == "" && err != nil {
				t.Fatalf("Check: %v", err)
			}
			if tt.measure != "" {
				var le *LimitError
				if !errors.As(err, &le) || le.Measure != tt.measure {
					t.Fatalf("Check: %v, want a LimitError on %s", err, tt.measure)
				}
			}
			if tt.measure == "" && got != tt.want {
				t.Errorf("Check = %+v, want %+v", got, tt.want)
			}
		})
	}
}
