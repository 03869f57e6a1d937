package chartpkg

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetChartFields(t *testing.T) {
	t.Parallel()
	const deps = "dependencies:\n- name: db\n  repository: file://../db\n- name: web\n  repository: file://../web\n  depends-on: [db]\n"
	tests := []struct {
		name, raw, version, appVersion, want string
	}{
		{
			name:    "plain values are replaced in place, the rest stays",
			raw:     "apiVersion: v2\nname: app # the app\nversion: 0.1.0 # bumped by CI\nappVersion: 1.0.0\n" + deps,
			version: "1.2.3", appVersion: "2.0.0",
			want: "apiVersion: v2\nname: app # the app\nversion: 1.2.3 # bumped by CI\nappVersion: 2.0.0\n" + deps,
		},
		{
			name:    "quoted values keep their quotes",
			raw:     "apiVersion: v2\nname: app\nversion: \"0.1.0\"\nappVersion: '1.0'\n",
			version: "0.2.0", appVersion: "it's 2",
			want: "apiVersion: v2\nname: app\nversion: \"0.2.0\"\nappVersion: 'it''s 2'\n",
		},
		{
			name:       "a value YAML would read as a number is quoted",
			raw:        "apiVersion: v2\nname: app\nversion: 0.1.0\nappVersion: v1\n",
			appVersion: "1.10",
			want:       "apiVersion: v2\nname: app\nversion: 0.1.0\nappVersion: \"1.10\"\n",
		},
		{
			name:       "a missing appVersion is appended",
			raw:        "apiVersion: v2\nname: app\nversion: 0.1.0",
			appVersion: "3.0.0",
			want:       "apiVersion: v2\nname: app\nversion: 0.1.0\nappVersion: 3.0.0\n",
		},
		{
			name: "nothing to set changes nothing",
			raw:  "apiVersion: v2\nname: app\nversion: 0.1.0\n" + deps,
			want: "apiVersion: v2\nname: app\nversion: 0.1.0\n" + deps,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := setChartFields([]byte(tt.raw), tt.version, tt.appVersion)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Chart.yaml (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetChartFieldsRefusesWhatItCannotEdit(t *testing.T) {
	t.Parallel()
	raw := "apiVersion: v2\nname: app\nversion: >-\n  0.1.0\n"
	if got, err := setChartFields([]byte(raw), "0.2.0", ""); err == nil {
		t.Errorf("a block scalar version was set:\n%s", got)
	}
}
