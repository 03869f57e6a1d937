package sequence

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/resource"
)

func obj(name, source string, annotations ...string) Object {
	o := Object{ID: resource.Identity{Kind: "ConfigMap", Namespace: "ns", Name: name}, Source: source, Annotations: map[string]string{}}
	for i := 0; i+1 < len(annotations); i += 2 {
		o.Annotations[annotations[i]] = annotations[i+1]
	}
	return o
}

// names renders batches as "name: obj obj | name: obj".
func names(batches []Batch) string {
	var parts []string
	for _, b := range batches {
		var ns []string
		for _, id := range b.Objects {
			ns = append(ns, id.Name)
		}
		slices.Sort(ns)
		parts = append(parts, b.Name+" = "+strings.Join(ns, " "))
	}
	return strings.Join(parts, " | ")
}

func TestOrderGroups(t *testing.T) {
	objs := []Object{
		obj("app", "web/templates/app.yaml", GroupAnnotation, "app", DependsOnGroupsAnnotation, `["database","queue"]`),
		obj("db", "web/templates/db.yaml", GroupAnnotation, "database"),
		obj("queue", "web/templates/queue.yaml", GroupAnnotation, "queue"),
		obj("loose", "web/templates/loose.yaml"),
		obj("db-config", "web/templates/db.yaml", GroupAnnotation, "database"),
	}
	got, err := Order(objs, []Chart{{Path: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "web: group database, group queue = db db-config queue | web: group app = app | web = loose"
	if names(got) != want {
		t.Errorf("Order =\n%s\nwant\n%s", names(got), want)
	}
}

// TestOrderSubcharts is the HIP's example: foo's own resources wait for bar and rabbitmq, and
// bar comes after nginx and rabbitmq; store, which nothing orders, goes beside foo's own.
func TestOrderSubcharts(t *testing.T) {
	objs := []Object{
		obj("foo-app", "foo/templates/app.yaml"),
		obj("nginx", "foo/charts/nginx/templates/deploy.yaml"),
		obj("rabbit", "foo/charts/rabbitmq/templates/sts.yaml"),
		obj("bar-db", "foo/charts/bar/templates/db.yaml", GroupAnnotation, "db"),
		obj("bar-app", "foo/charts/bar/templates/app.yaml", GroupAnnotation, "app", DependsOnGroupsAnnotation, `["db"]`),
		obj("store", "foo/charts/store/templates/cm.yaml"),
	}
	charts := []Chart{
		{Path: "foo", Subcharts: []string{"nginx", "rabbitmq", "bar", "store"}, OwnAfter: []string{"bar", "rabbitmq"},
			DependsOn: map[string][]string{"bar": {"nginx", "rabbitmq"}}},
		{Path: "foo/charts/nginx"}, {Path: "foo/charts/rabbitmq"}, {Path: "foo/charts/bar"}, {Path: "foo/charts/store"},
	}
	got, err := Order(objs, charts)
	if err != nil {
		t.Fatal(err)
	}
	want := "nginx; rabbitmq = nginx rabbit | bar: group db = bar-db | bar: group app = bar-app | foo; store = foo-app store"
	if names(got) != want {
		t.Errorf("Order =\n%s\nwant\n%s", names(got), want)
	}
}

func TestOrderErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		objs   []Object
		charts []Chart
		want   []string
	}{
		{"group cycle", []Object{
			obj("a", "web/templates/a.yaml", GroupAnnotation, "a", DependsOnGroupsAnnotation, `["b"]`),
			obj("b", "web/templates/b.yaml", GroupAnnotation, "b", DependsOnGroupsAnnotation, `["a"]`),
		}, []Chart{{Path: "web"}}, []string{"chart web", "cycle", `"a" -> "b" -> "a"`}},
		{"unknown group", []Object{
			obj("a", "web/templates/a.yaml", GroupAnnotation, "a", DependsOnGroupsAnnotation, `["missing"]`),
		}, []Chart{{Path: "web"}}, []string{`group "a" depends on group "missing"`}},
		{"two groups", []Object{
			obj("a", "web/templates/a.yaml", GroupAnnotation, "a,b"),
		}, []Chart{{Path: "web"}}, []string{"ConfigMap/ns/a", "more than one group"}},
		{"not a JSON array", []Object{
			obj("a", "web/templates/a.yaml", GroupAnnotation, "a", DependsOnGroupsAnnotation, "b"),
		}, []Chart{{Path: "web"}}, []string{"ConfigMap/ns/a", "JSON array"}},
		{"subchart cycle", nil, []Chart{
			{Path: "web", Subcharts: []string{"x", "y"}, DependsOn: map[string][]string{"x": {"y"}, "y": {"x"}}},
			{Path: "web/charts/x"}, {Path: "web/charts/y"},
		}, []string{"subcharts depend on each other in a cycle", `"x" -> "y" -> "x"`}},
		{"unknown subchart", nil, []Chart{
			{Path: "web", Subcharts: []string{"x"}, OwnAfter: []string{"store"}}, {Path: "web/charts/x"},
		}, []string{`"store" is not a subchart`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Order(tt.objs, tt.charts)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Order error = %v, want an *Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestChartsOf(t *testing.T) {
	sub := func(name string) *chartv2.Chart {
		return &chartv2.Chart{Metadata: &chartv2.Metadata{Name: name, Version: "1.0.0"}}
	}
	top := &chartv2.Chart{
		Metadata: &chartv2.Metadata{Name: "foo", Version: "1.0.0", Annotations: map[string]string{DependsOnSubchartsAnnotation: `["bar"]`}},
		Raw: []*common.File{{Name: "Chart.yaml", Data: []byte(`name: foo
version: 1.0.0
dependencies:
- name: nginx
  version: 1.0.0
- name: bar-chart
  alias: bar
  version: 1.0.0
  depends-on: [nginx]
`)}},
	}
	top.SetDependencies(sub("nginx"), sub("bar"))
	charts, err := ChartsOf(top)
	if err != nil {
		t.Fatal(err)
	}
	var foo Chart
	for _, c := range charts {
		if c.Path == "foo" {
			foo = c
		}
	}
	if !slices.Equal(foo.Subcharts, []string{"nginx", "bar"}) || !slices.Equal(foo.OwnAfter, []string{"bar"}) ||
		!slices.Equal(foo.DependsOn["bar"], []string{"nginx"}) {
		t.Errorf("ChartsOf foo = %+v", foo)
	}

	// Recorded, the chart has neither Chart.yaml nor its subcharts: its metadata keeps them.
	if err := Record(top); err != nil {
		t.Fatal(err)
	}
	recorded := &chartv2.Chart{Metadata: top.Metadata}
	again, err := ChartsOf(recorded)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(charts, again, func(a, b Chart) bool {
		return a.Path == b.Path && slices.Equal(a.Subcharts, b.Subcharts) && slices.Equal(a.OwnAfter, b.OwnAfter) &&
			slices.Equal(a.DependsOn["bar"], b.DependsOn["bar"])
	}) {
		t.Errorf("ChartsOf a recorded chart = %+v, want %+v", again, charts)
	}
}
