package sequence

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// FuzzOrder orders resources whose HIP-0025 annotations and Chart.yaml depends-on are whatever
// a chart says: Order either returns an *Error or batches that hold each resource exactly once,
// with every group a resource depends on in an earlier batch.
func FuzzOrder(f *testing.F) {
	f.Add("database", `["queue"]`, "queue", `[]`, "web/templates/a.yaml", `["db"]`, "db")
	f.Add("a", `["b"]`, "b", `["a"]`, "web/charts/db/templates/x.yaml", `["web"]`, "db")
	f.Add("", `not json`, "x", `[""]`, "", `[1,2]`, "")
	f.Add("a", `["a"]`, "a", `["a","a"]`, "web/charts/a/charts/a/templates/a", `["a"]`, "a")
	f.Add("g", `["missing"]`, "h", `null`, "other/templates/x", `{}`, "b")
	f.Fuzz(func(t *testing.T, group1, deps1, group2, deps2, source2, chartDeps, subchart string) {
		objs := []Object{
			obj("one", "web/templates/one.yaml", GroupAnnotation, group1, DependsOnGroupsAnnotation, deps1),
			obj("two", source2, GroupAnnotation, group2, DependsOnGroupsAnnotation, deps2),
			obj("three", "web/charts/"+subchart+"/templates/three.yaml"),
		}
		var after []string
		_ = json.Unmarshal([]byte(chartDeps), &after)
		charts := []Chart{
			{Path: "web", Subcharts: []string{subchart}, OwnAfter: after},
			{Path: "web/charts/" + subchart},
		}
		batches, err := Order(objs, charts)
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Order: error %T (%v), want *Error", err, err)
			}
			return
		}
		at := map[string]int{}
		for i, b := range batches {
			for _, id := range b.Objects {
				if _, dup := at[id.Name]; dup {
					t.Fatalf("Order: %s in two batches: %s", id.Name, describe(batches))
				}
				at[id.Name] = i
			}
		}
		if len(at) != len(objs) {
			t.Fatalf("Order: %d of %d resources in batches: %s", len(at), len(objs), describe(batches))
		}
		// Within the top chart, a resource comes after every group it depends on.
		groupAt := map[string]int{}
		for _, o := range objs {
			if g := o.Annotations[GroupAnnotation]; g != "" && chartPath(o.Source) == "web" {
				if i, ok := groupAt[g]; !ok || at[o.ID.Name] > i {
					groupAt[g] = at[o.ID.Name]
				}
			}
		}
		for _, o := range objs {
			if chartPath(o.Source) != "web" {
				continue
			}
			var deps []string
			if json.Unmarshal([]byte(o.Annotations[DependsOnGroupsAnnotation]), &deps) != nil {
				continue
			}
			for _, d := range deps {
				if i, ok := groupAt[d]; ok && d != o.Annotations[GroupAnnotation] && i >= at[o.ID.Name] {
					t.Fatalf("Order: %s depends on group %q, applied in batch %d, not before its own %d: %s",
						o.ID.Name, d, i, at[o.ID.Name], describe(batches))
				}
			}
		}
	})
}

func describe(batches []Batch) string {
	var b strings.Builder
	for i, batch := range batches {
		fmt.Fprintf(&b, "[%d %s:", i, batch.Name)
		for _, id := range batch.Objects {
			b.WriteString(" " + id.Name)
		}
		b.WriteString("] ")
	}
	return b.String()
}
