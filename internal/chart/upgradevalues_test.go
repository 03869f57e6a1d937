package chart

import (
	"reflect"
	"strings"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

func TestUpgradeValues(t *testing.T) {
	oldChart := &chartv2.Chart{
		Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0"},
		Values:   map[string]any{"image": "v1", "replicas": 1, "old": "only-in-old-chart"},
	}
	newChart := &chartv2.Chart{
		Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "app", Version: "2.0.0"},
		Values:   map[string]any{"image": "v2", "replicas": 1},
	}
	prev := Previous{Chart: oldChart, Config: map[string]any{"replicas": 3, "db": map[string]any{"host": "a", "port": 5432}}}
	newVals := map[string]any{"db": map[string]any{"host": "b"}}
	tests := []struct {
		name         string
		strategy     ValuesStrategy
		newVals      map[string]any
		wantVals     map[string]any
		wantOldChart bool // renders with the previous release's coalesced values as defaults
	}{
		{name: "default with new values", strategy: ValuesDefault, newVals: newVals, wantVals: newVals},
		{name: "default without new values reuses config", strategy: ValuesDefault, newVals: nil, wantVals: prev.Config},
		{name: "reset", strategy: ValuesReset, newVals: nil, wantVals: nil},
		{
			name: "reuse", strategy: ValuesReuse, newVals: newVals, wantOldChart: true,
			wantVals: map[string]any{"replicas": 3, "db": map[string]any{"host": "b", "port": 5432}},
		},
		{
			name: "reset then reuse", strategy: ValuesResetThenReuse, newVals: newVals,
			wantVals: map[string]any{"replicas": 3, "db": map[string]any{"host": "b", "port": 5432}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, vals, err := UpgradeValues(newChart, prev, tt.newVals, tt.strategy)
			if err != nil {
				t.Fatalf("UpgradeValues: %v", err)
			}
			if !reflect.DeepEqual(vals, tt.wantVals) {
				t.Errorf("values = %v, want %v", vals, tt.wantVals)
			}
			if tt.wantOldChart {
				if ch == newChart || ch.Values["old"] != "only-in-old-chart" || ch.Values["image"] != "v1" {
					t.Errorf("chart values = %v, want the previous release's coalesced values", ch.Values)
				}
				if ch.Metadata.Version != "2.0.0" {
					t.Errorf("chart version = %s, want the new chart's", ch.Metadata.Version)
				}
			} else if ch != newChart {
				t.Error("chart replaced, want the new chart as given")
			}
		})
	}
	if !reflect.DeepEqual(newVals, map[string]any{"db": map[string]any{"host": "b"}}) {
		t.Errorf("UpgradeValues modified the new values: %v", newVals)
	}
	if newChart.Values["image"] != "v2" {
		t.Errorf("UpgradeValues modified the new chart: %v", newChart.Values)
	}
	if _, _, err := UpgradeValues(newChart, prev, nil, "sideways"); err == nil || !strings.Contains(err.Error(), `"sideways"`) {
		t.Errorf("unknown strategy: error %v", err)
	}
}
