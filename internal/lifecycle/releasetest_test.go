package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddFilter(t *testing.T) {
	tests := []struct {
		filters          []string
		include, exclude []string
		ok               bool
	}{
		{[]string{"name=smoke"}, []string{"smoke"}, nil, true},
		{[]string{"!name=slow", "! name=flaky"}, nil, []string{"slow", "flaky"}, true},
		{[]string{"name=a", "!name=b"}, []string{"a"}, []string{"b"}, true},
		{[]string{"smoke"}, nil, nil, false},
		{[]string{"label=x"}, nil, nil, false},
	}
	for _, tt := range tests {
		var o TestOptions
		ok := true
		for _, f := range tt.filters {
			ok = o.AddFilter(f) && ok
		}
		if ok != tt.ok {
			t.Errorf("%q: accepted %v, want %v", tt.filters, ok, tt.ok)
		}
		if diff := cmp.Diff([][]string{tt.include, tt.exclude}, [][]string{o.Include, o.Exclude}); diff != "" {
			t.Errorf("%q: %s", tt.filters, diff)
		}
	}
}
