package controller

import (
	"encoding/json"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/release"
)

func TestFinishesAsIs(t *testing.T) {
	// Values read back from a record: numbers are float64.
	recorded := func(version, values string) *release.Release {
		var config map[string]any
		if values != "" {
			if err := json.Unmarshal([]byte(values), &config); err != nil {
				t.Fatal(err)
			}
		}
		return &release.Release{Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Version: version}}, Config: config}
	}
	tests := []struct {
		name    string
		pending *release.Release
		version string
		values  map[string]any
		want    bool
	}{
		{"same chart and values", recorded("1.0.0", `{"replicas": 2, "image": {"tag": "a"}}`), "1.0.0",
			map[string]any{"replicas": float64(2), "image": map[string]any{"tag": "a"}}, true},
		{"no values either way", recorded("1.0.0", ""), "1.0.0", map[string]any{}, true},
		{"other values", recorded("1.0.0", `{"replicas": 2}`), "1.0.0", map[string]any{"replicas": float64(3)}, false},
		{"values added", recorded("1.0.0", ""), "1.0.0", map[string]any{"replicas": float64(3)}, false},
		{"other chart version", recorded("1.0.0", `{"replicas": 2}`), "1.1.0", map[string]any{"replicas": float64(2)}, false},
		{"no chart recorded", &release.Release{}, "1.0.0", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := finishesAsIs(tt.pending, tt.version, tt.values); got != tt.want {
				t.Errorf("finishesAsIs = %v, want %v", got, tt.want)
			}
		})
	}
}
