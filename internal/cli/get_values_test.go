package cli

import (
	"bytes"
	"strings"
	"testing"

	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli/output"

	"github.com/berthdev/berth/internal/release"
)

// TestGetValuesMasked: the values a revision recorded as from an encrypted values file are
// masked in every output format, a map whole, and shown when revealed.
func TestGetValuesMasked(t *testing.T) {
	rel := &release.Release{Name: "web", Version: 1, Chart: &chartv2.Chart{Metadata: &chartv2.Metadata{Name: "web"}},
		Config: map[string]any{"db": map[string]any{"password": "Hunter2-s3cret", "host": "db.local"},
			"tls": map[string]any{"key": "KEY-s3cret"}, "replicas": 2}}
	if err := release.SetEncryptedValues(rel, [][]string{{"db", "password"}, {"tls"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		format output.Format
		reveal bool
		want   []string
		absent []string
	}{
		{format: output.YAML, want: []string{"password: (masked)", "tls: (masked)", "host: db.local"}, absent: []string{"s3cret"}},
		{format: output.JSON, want: []string{`"password":"(masked)"`, `"tls":"(masked)"`, `"host":"db.local"`}, absent: []string{"s3cret"}},
		{format: output.Table, want: []string{"USER-SUPPLIED VALUES:", "password: (masked)"}, absent: []string{"s3cret"}},
		{format: output.YAML, reveal: true, want: []string{"password: Hunter2-s3cret", "key: KEY-s3cret"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.format.Write(&b, valuesWriter{vals: maskValues(rel, rel.Config, tt.reveal)}); err != nil {
				t.Fatal(err)
			}
			out := strings.ReplaceAll(b.String(), " ", "")
			for _, w := range tt.want {
				if !strings.Contains(out, strings.ReplaceAll(w, " ", "")) {
					t.Errorf("the output does not say %q:\n%s", w, b.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(b.String(), a) {
					t.Errorf("the output shows %q:\n%s", a, b.String())
				}
			}
		})
	}
	if rel.Config["db"].(map[string]any)["password"] != "Hunter2-s3cret" {
		t.Error("masking changed the revision's values")
	}
}
