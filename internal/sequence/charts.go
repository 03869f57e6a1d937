package sequence

import (
	"encoding/json"
	"fmt"
	"maps"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// Recorded is the annotation of the recorded chart's metadata that keeps what ChartsOf read from
// the chart as loaded: Helm's record keeps neither the subcharts nor what Chart.yaml holds beyond
// Helm's fields, and a rollback or an uninstall orders the revision as its chart did. Record sets
// it once the chart is rendered, so no template sees it.
const Recorded = "berth.dev/sequence"

// ChartsOf reads what ch, a chart as rendering processed it (subcharts disabled by conditions
// or tags removed), and its subcharts declare about order; for a chart read from a release
// record, what Record kept.
func ChartsOf(ch *chartv2.Chart) ([]Chart, error) {
	if v := ch.Metadata.Annotations[Recorded]; v != "" && len(ch.Raw) == 0 && len(ch.Dependencies()) == 0 {
		var out []Chart
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, &Error{Chart: ch.Name(), Problem: fmt.Sprintf("recorded %s: %v", Recorded, err)}
		}
		return out, nil
	}
	var out []Chart
	var walk func(c *chartv2.Chart, path string) error
	walk = func(c *chartv2.Chart, path string) error {
		info := Chart{Path: path, DependsOn: map[string][]string{}}
		if v := c.Metadata.Annotations[DependsOnSubchartsAnnotation]; v != "" {
			if err := json.Unmarshal([]byte(v), &info.OwnAfter); err != nil {
				return &Error{Chart: path, Problem: fmt.Sprintf("Chart.yaml annotation %s is not a JSON array of subchart names: %q", DependsOnSubchartsAnnotation, v)}
			}
		}
		declared, err := dependsOnOf(c)
		if err != nil {
			return &Error{Chart: path, Problem: err.Error()}
		}
		for _, sub := range c.Dependencies() {
			name := sub.Name()
			info.Subcharts = append(info.Subcharts, name)
			if deps, ok := declared[name]; ok {
				info.DependsOn[name] = deps
			}
			if err := walk(sub, path+"/charts/"+name); err != nil {
				return err
			}
		}
		out = append(out, info)
		return nil
	}
	if err := walk(ch, ch.Name()); err != nil {
		return nil, err
	}
	return out, nil
}

// dependsOnOf reads the depends-on list of each dependency in c's Chart.yaml as loaded, by the
// name the subchart goes by (its alias, if it has one).
func dependsOnOf(c *chartv2.Chart) (map[string][]string, error) {
	out := map[string][]string{}
	for _, f := range c.Raw {
		if f.Name != "Chart.yaml" {
			continue
		}
		var doc struct {
			Dependencies []struct {
				Name      string   `json:"name"`
				Alias     string   `json:"alias"`
				DependsOn []string `json:"depends-on"`
			} `json:"dependencies"`
		}
		if err := yaml.Unmarshal(f.Data, &doc); err != nil {
			return nil, fmt.Errorf("Chart.yaml: %w", err)
		}
		for _, d := range doc.Dependencies {
			if len(d.DependsOn) == 0 {
				continue
			}
			name := d.Name
			if d.Alias != "" {
				name = d.Alias
			}
			out[name] = d.DependsOn
		}
	}
	return out, nil
}

// Record keeps in ch's metadata (Recorded) what ChartsOf reads of ch and its subcharts, when it
// has any, so that the release record still orders them. ch is the chart as rendered (a copy of
// the one loaded, whose metadata Record leaves alone), about to be recorded; its templates have
// run.
func Record(ch *chartv2.Chart) error {
	if len(ch.Dependencies()) == 0 {
		return nil // the manifest's annotations say all there is
	}
	charts, err := ChartsOf(ch)
	if err != nil {
		return err
	}
	b, err := json.Marshal(charts)
	if err != nil {
		return err
	}
	md := *ch.Metadata
	// A copy: the map may be shared with the chart as loaded, which renders again.
	md.Annotations = maps.Clone(ch.Metadata.Annotations)
	if md.Annotations == nil {
		md.Annotations = map[string]string{}
	}
	md.Annotations[Recorded] = string(b)
	ch.Metadata = &md
	return nil
}
