// Package sequence orders a release's resources in batches as Helm's HIP-0025 describes: resource
// groups within a chart (helm.sh/resource-group, helm.sh/depends-on/resource-groups), subcharts
// among their siblings (a dependency's depends-on in Chart.yaml), and a chart's own resources
// after the subcharts it names (helm.sh/depends-on/subcharts in Chart.yaml's annotations). Each
// batch is applied and waited for before the next one. The package is pure: it reads what the
// chart and its rendered manifest declare and returns the batches, or an error that names what
// is wrong, before anything changes.
package sequence

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/resource"
)

// The annotations of HIP-0025.
const (
	// GroupAnnotation puts a template's resource in a named group of its chart.
	GroupAnnotation = "helm.sh/resource-group"
	// DependsOnGroupsAnnotation lists, as a JSON array, the groups of the same chart that must be
	// ready before the resource is applied. The API server refuses its key (two slashes), so it
	// is removed before an object is sent and kept in the stored manifest.
	DependsOnGroupsAnnotation = "helm.sh/depends-on/resource-groups"
	// DependsOnSubchartsAnnotation, in Chart.yaml's annotations, lists as a JSON array the
	// subcharts that must be ready before the chart's own resources are applied.
	DependsOnSubchartsAnnotation = "helm.sh/depends-on/subcharts"
)

// Object is a resource of the release: its identity, the template it came from (the manifest's
// "# Source:" path, which names its chart) and its annotations.
type Object struct {
	ID          resource.Identity
	Source      string
	Annotations map[string]string
}

// Chart is what one chart of the release declares about order. Its Path is where its templates
// are rendered: the top chart's name, then "/charts/NAME" for each subchart level down.
type Chart struct {
	Path string `json:"path"`
	// Subcharts are the names (aliases where set) of its enabled subcharts.
	Subcharts []string `json:"subcharts,omitempty"`
	// DependsOn holds, for each subchart, the sibling subcharts it comes after (depends-on).
	DependsOn map[string][]string `json:"dependsOn,omitempty"`
	// OwnAfter are the subcharts the chart's own resources come after
	// (helm.sh/depends-on/subcharts).
	OwnAfter []string `json:"ownAfter,omitempty"`
}

// Batch is resources applied together and waited for before the next batch.
type Batch struct {
	// Name says what the batch holds, for people: each chart's part of it, as "CHART: group a,
	// group b" or "CHART" for resources of no group.
	Name    string
	Objects []resource.Identity
}

// Declared reports whether the release declares any order: a resource group, a dependency's
// depends-on or a chart's depends-on/subcharts.
func Declared(objs []Object, charts []Chart) bool {
	for _, o := range objs {
		if o.Annotations[GroupAnnotation] != "" || o.Annotations[DependsOnGroupsAnnotation] != "" {
			return true
		}
	}
	for _, c := range charts {
		if len(c.OwnAfter) > 0 {
			return true
		}
		for _, deps := range c.DependsOn {
			if len(deps) > 0 {
				return true
			}
		}
	}
	return false
}

// Error says why the release's order cannot be built; nothing was changed.
type Error struct {
	// Chart is the chart's path; Problem what is wrong there.
	Chart   string
	Problem string
}

func (e *Error) Error() string {
	return fmt.Sprintf("chart %s: %s", e.Chart, e.Problem)
}

// Order returns the batches of objs, in order. Within a chart, groups go in the order their
// dependencies give (groups that depend on nothing left to apply go together) and resources of
// no group last. Subcharts go in the order their depends-on give; a chart's own resources go
// after the subcharts it names; a subchart nothing orders goes beside its parent's own
// resources. What goes at the same point goes in the same batch.
func Order(objs []Object, charts []Chart) ([]Batch, error) {
	byPath := map[string]Chart{}
	for _, c := range charts {
		byPath[c.Path] = c
	}
	top := ""
	for _, c := range charts {
		if top == "" || len(c.Path) < len(top) {
			top = c.Path
		}
	}
	own := map[string][]Object{}
	for _, o := range objs {
		p := chartPath(o.Source)
		if _, ok := byPath[p]; !ok {
			p = top // a source outside the chart tree (a post-renderer's): the top chart's own
		}
		own[p] = append(own[p], o)
	}
	seq, err := chartSequence(top, byPath, own)
	if err != nil {
		return nil, err
	}
	out := make([]Batch, 0, len(seq))
	for _, s := range seq {
		if len(s.objects) == 0 {
			continue
		}
		out = append(out, Batch{Name: strings.Join(s.parts, "; "), Objects: s.objects})
	}
	return out, nil
}

// step is one batch being built: the names of its parts and its objects.
type step struct {
	parts   []string
	objects []resource.Identity
}

// chartPath is the chart path of a template's source: what comes before "/templates/".
func chartPath(source string) string {
	if i := strings.LastIndex(source, "/templates/"); i >= 0 {
		return source[:i]
	}
	if i := strings.Index(source, "/"); i >= 0 {
		return source[:i]
	}
	return source
}

// chartSequence is the sequence of batches of the chart at path, its subcharts included.
func chartSequence(path string, charts map[string]Chart, own map[string][]Object) ([]step, error) {
	c := charts[path]
	ownSeq, err := groupSequence(path, own[path])
	if err != nil {
		return nil, err
	}
	if len(c.Subcharts) == 0 && len(c.OwnAfter) == 0 {
		return ownSeq, nil
	}
	const self = "" // the chart's own resources, among its subcharts
	units := map[string][]step{self: ownSeq}
	deps := map[string][]string{self: c.OwnAfter}
	ordered := map[string]bool{}
	for _, name := range c.OwnAfter {
		ordered[name] = true
	}
	for _, name := range c.Subcharts {
		if name == self || strings.Contains(name, "/") {
			// Not a chart's name: it would take the place of the chart's own resources, or of
			// another chart's.
			return nil, &Error{Chart: path, Problem: fmt.Sprintf("subchart %q: not a chart name", name)}
		}
		seq, err := chartSequence(path+"/charts/"+name, charts, own)
		if err != nil {
			return nil, err
		}
		units[name] = seq
		deps[name] = c.DependsOn[name]
		if len(c.DependsOn[name]) > 0 {
			ordered[name] = true
		}
		for _, d := range c.DependsOn[name] {
			ordered[d] = true
		}
	}
	for name, ds := range deps {
		for _, d := range ds {
			if _, ok := units[d]; !ok || d == self {
				who := "the chart's own resources (" + DependsOnSubchartsAnnotation + ")"
				if name != self {
					who = "subchart " + name + " (depends-on)"
				}
				return nil, &Error{Chart: path, Problem: fmt.Sprintf("%s: %q is not a subchart of it", who, d)}
			}
		}
	}
	levels, err := levelsOf(deps)
	if err != nil {
		return nil, &Error{Chart: path, Problem: "subcharts depend on each other in a cycle: " + err.Error()}
	}
	for _, name := range c.Subcharts {
		if !ordered[name] {
			levels[name] = levels[self] // nothing orders it: beside the chart's own resources
		}
	}
	return mergeByLevel(units, levels), nil
}

// groupSequence is the sequence of the resources of one chart: its groups in the order their
// dependencies give, groups at the same point together, then the resources of no group.
func groupSequence(path string, objs []Object) ([]step, error) {
	members := map[string][]resource.Identity{}
	deps := map[string][]string{}
	var ungrouped []resource.Identity
	for _, o := range objs {
		g := strings.TrimSpace(o.Annotations[GroupAnnotation])
		var after []string
		if v := o.Annotations[DependsOnGroupsAnnotation]; v != "" {
			if err := json.Unmarshal([]byte(v), &after); err != nil {
				return nil, &Error{Chart: path, Problem: fmt.Sprintf("%s: %s is not a JSON array of group names: %q", o.ID, DependsOnGroupsAnnotation, v)}
			}
		}
		if g == "" {
			ungrouped = append(ungrouped, o.ID)
			continue
		}
		if strings.ContainsAny(g, ",[ ") {
			return nil, &Error{Chart: path, Problem: fmt.Sprintf("%s: %s %q names more than one group; an object belongs to one group", o.ID, GroupAnnotation, g)}
		}
		members[g] = append(members[g], o.ID)
		for _, a := range after {
			if !slices.Contains(deps[g], a) {
				deps[g] = append(deps[g], a)
			}
		}
		if _, ok := deps[g]; !ok {
			deps[g] = nil
		}
	}
	for _, g := range slices.Sorted(maps.Keys(deps)) {
		for _, a := range deps[g] {
			if _, ok := members[a]; !ok {
				return nil, &Error{Chart: path, Problem: fmt.Sprintf("group %q depends on group %q, which no resource of the chart declares (%s)", g, a, GroupAnnotation)}
			}
		}
	}
	levels, err := levelsOf(deps)
	if err != nil {
		return nil, &Error{Chart: path, Problem: "resource groups depend on each other in a cycle: " + err.Error()}
	}
	var seq []step
	for _, g := range slices.SortedFunc(maps.Keys(levels), func(a, b string) int {
		return cmp.Or(cmp.Compare(levels[a], levels[b]), strings.Compare(a, b))
	}) {
		for len(seq) <= levels[g] {
			seq = append(seq, step{})
		}
		s := &seq[levels[g]]
		s.parts = append(s.parts, "group "+g)
		s.objects = append(s.objects, members[g]...)
	}
	for i := range seq {
		seq[i].parts = []string{name(path) + ": " + strings.Join(seq[i].parts, ", ")}
	}
	if len(ungrouped) > 0 {
		seq = append(seq, step{parts: []string{name(path)}, objects: ungrouped})
	}
	return seq, nil
}

// name is how a batch names the chart at path: its last element.
func name(path string) string {
	return path[strings.LastIndex(path, "/")+1:]
}

// levelsOf gives each node of deps (node -> the nodes it comes after) its level: 0 for nodes
// after nothing, else one more than the highest level of what it comes after. An error names a
// cycle.
func levelsOf(deps map[string][]string) (map[string]int, error) {
	levels := map[string]int{}
	const visiting = -1
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch l, ok := levels[n]; {
		case ok && l == visiting:
			i := slices.Index(path, n)
			return fmt.Errorf("%s", strings.Join(quoteAll(append(path[i:], n)), " -> "))
		case ok:
			return nil
		}
		levels[n] = visiting
		level := 0
		for _, d := range slices.Sorted(slices.Values(deps[n])) {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
			level = max(level, levels[d]+1)
		}
		levels[n] = level
		return nil
	}
	for _, n := range slices.Sorted(maps.Keys(deps)) {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return levels, nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		if n == "" {
			n = "the chart's own resources"
		}
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// mergeByLevel runs the units level after level; the units of one level go beside each other,
// batch i of each in one batch.
func mergeByLevel(units map[string][]step, levels map[string]int) []step {
	var out []step
	for _, lv := range slices.Sorted(maps.Keys(invert(levels))) {
		var merged []step
		for _, n := range invert(levels)[lv] {
			for i, s := range units[n] {
				for len(merged) <= i {
					merged = append(merged, step{})
				}
				merged[i].parts = append(merged[i].parts, s.parts...)
				merged[i].objects = append(merged[i].objects, s.objects...)
			}
		}
		out = append(out, merged...)
	}
	return out
}

// invert maps each level to its nodes, in name order (the chart's own resources first).
func invert(levels map[string]int) map[int][]string {
	out := map[int][]string{}
	for _, n := range slices.Sorted(maps.Keys(levels)) {
		out[levels[n]] = append(out[levels[n]], n)
	}
	return out
}

// Strip removes from obj what the API server refuses among the annotations of HIP-0025: the key
// of DependsOnGroupsAnnotation has two slashes. The stored manifest keeps it.
func Strip(obj *unstructured.Unstructured) {
	a := obj.GetAnnotations()
	if _, ok := a[DependsOnGroupsAnnotation]; !ok {
		return
	}
	delete(a, DependsOnGroupsAnnotation)
	if len(a) == 0 {
		a = nil
	}
	obj.SetAnnotations(a)
}
