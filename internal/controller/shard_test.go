package controller

import (
	"errors"
	"testing"
)

// TestShardLeaseName: one shard's Lease name does not depend on how its selector is written;
// two shards' names differ; every Release keeps the name of an unsharded controller.
func TestShardLeaseName(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"", "", true},
		{"b=1,a=2", "a=2,b=1", true},
		{"k in (y,x)", "k in (x, y)", true},
		{"sharding.berth.dev/key=shard1", "sharding.berth.dev/key=shard2", false},
		{"sharding.berth.dev/key=shard1", "!sharding.berth.dev/key", false},
		{"", "!sharding.berth.dev/key", false},
	} {
		a, err := ParseShard(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ParseShard(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.LeaseName() == b.LeaseName(); got != tc.same {
			t.Errorf("Lease names of %q (%s) and %q (%s) equal: %v, want %v", tc.a, a.LeaseName(), tc.b, b.LeaseName(), got, tc.same)
		}
	}
	if s, _ := ParseShard(""); s.LeaseName() != Name+".berth.dev" || !s.All() || s.Selector() != "" {
		t.Errorf("the shard of every Release has Lease %s, selector %q", s.LeaseName(), s.Selector())
	}
}

// TestParseShardRefusesBadSelectors: a selector that does not parse is a *SelectorError naming it.
func TestParseShardRefusesBadSelectors(t *testing.T) {
	for _, sel := range []string{"a=b=c", "k in (x", "!", "a b"} {
		_, err := ParseShard(sel)
		var se *SelectorError
		if !errors.As(err, &se) || se.Selector != sel {
			t.Errorf("ParseShard(%q): %v, want a *SelectorError naming it", sel, err)
		}
	}
}
