package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/berthdev/berth/internal/chart"
	"github.com/berthdev/berth/internal/release"
)

// TestEncryptedValuesOfAnUpgrade: an upgrade records the paths of its own values from encrypted
// files, and keeps those of the current revision when it reuses its values.
func TestEncryptedValuesOfAnUpgrade(t *testing.T) {
	current := &release.Release{Name: "web", Version: 1, Config: map[string]any{"db": map[string]any{"password": "x"}},
		Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "web"}}}
	if err := release.SetEncryptedValues(current, [][]string{{"db", "password"}}); err != nil {
		t.Fatal(err)
	}
	own := [][]string{{"token"}}
	both := [][]string{{"db", "password"}, {"token"}}
	tests := []struct {
		name     string
		values   map[string]any
		own      [][]string
		strategy chart.ValuesStrategy
		want     [][]string
	}{
		{name: "--reuse-values", values: map[string]any{"token": "t"}, own: own, strategy: chart.ValuesReuse, want: both},
		{name: "--reset-then-reuse-values", values: map[string]any{"token": "t"}, own: own, strategy: chart.ValuesResetThenReuse, want: both},
		{name: "--reset-values", values: map[string]any{"token": "t"}, own: own, strategy: chart.ValuesReset, want: own},
		{name: "new values", values: map[string]any{"token": "t"}, own: own, want: own},
		{name: "no values: the current ones are reused", want: [][]string{{"db", "password"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := UpgradeOptions{Values: tt.values, EncryptedValues: tt.own, ValuesStrategy: tt.strategy}
			if diff := cmp.Diff(tt.want, encryptedValues(o, current)); diff != "" {
				t.Errorf("encryptedValues (-want +got):\n%s", diff)
			}
		})
	}
}
