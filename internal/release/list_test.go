package release

import (
	"slices"
	"strconv"
	"testing"
)

func TestSelect(t *testing.T) {
	records := []*Release{
		rev("a", "web", 1, StatusSuperseded),
		rev("a", "web", 2, StatusDeployed),
		rev("a", "db", 1, StatusFailed),
		rev("a", "cache", 1, StatusSuperseded),
		rev("a", "cache", 2, StatusPendingUpgrade),
		rev("a", "old", 1, StatusUninstalled),
		rev("a", "odd", 1, StatusUnknown),
		rev("b", "web", 1, StatusDeployed),
	}
	records[7].Labels = map[string]string{"team": "blue"}
	records[1].Labels = map[string]string{"team": "red"}

	tests := []struct {
		name string
		opts ListOptions
		want []string // namespace/name:version
	}{
		{"default is every status but unknown, newest revision, by name", ListOptions{},
			[]string{"a/cache:2", "a/db:1", "a/old:1", "a/web:2", "b/web:1"}},
		{"deployed", ListOptions{Statuses: []Status{StatusDeployed}}, []string{"a/web:2", "b/web:1"}},
		{"deployed and failed", ListOptions{Statuses: []Status{StatusDeployed, StatusFailed}},
			[]string{"a/db:1", "a/web:2", "b/web:1"}},
		{"pending", ListOptions{Statuses: []Status{StatusPendingInstall, StatusPendingUpgrade, StatusPendingRollback}},
			[]string{"a/cache:2"}},
		{"only superseded looks at old revisions", ListOptions{Statuses: []Status{StatusSuperseded}},
			[]string{"a/cache:1", "a/web:1"}},
		{"superseded with another status looks at newest revisions only",
			ListOptions{Statuses: []Status{StatusSuperseded, StatusFailed}}, []string{"a/db:1"}},
		{"unknown", ListOptions{Statuses: []Status{StatusUnknown}}, []string{"a/odd:1"}},
		{"filter", ListOptions{Filter: "^w"}, []string{"a/web:2", "b/web:1"}},
		{"selector", ListOptions{Selector: "team=blue"}, []string{"b/web:1"}},
		{"reverse", ListOptions{Reverse: true}, []string{"b/web:1", "a/web:2", "a/old:1", "a/db:1", "a/cache:2"}},
		{"by date", ListOptions{ByDate: true}, []string{"a/db:1", "a/old:1", "b/web:1", "a/cache:2", "a/web:2"}},
		{"max", ListOptions{Max: 2}, []string{"a/cache:2", "a/db:1"}},
		{"offset and max", ListOptions{Offset: 2, Max: 2}, []string{"a/old:1", "a/web:2"}},
		{"offset past the end", ListOptions{Offset: 9}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(slices.Clone(records), tt.opts)
			if err != nil {
				t.Fatalf("Select: %v", err)
			}
			names := []string{}
			for _, r := range got {
				names = append(names, r.Namespace+"/"+r.Name+":"+strconv.Itoa(r.Version))
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("Select(%+v) = %v, want %v", tt.opts, names, tt.want)
			}
		})
	}
}

func TestSelectErrors(t *testing.T) {
	for _, opts := range []ListOptions{{Filter: "("}, {Selector: "a in (b"}} {
		if _, err := Select(nil, opts); err == nil {
			t.Errorf("Select(%+v): no error", opts)
		}
	}
}
