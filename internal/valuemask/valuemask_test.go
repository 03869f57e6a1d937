package valuemask

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func values() map[string]any {
	return map[string]any{
		"db":    map[string]any{"user": "app", "password": "Hunter2", "host": "db.local", "port": float64(54321)},
		"hosts": []any{"a.example", "b.example"},
		"tls":   map[string]any{"key": "-----BEGIN KEY-----", "enabled": true, "ca": nil},
		"name":  "web",
	}
}

func TestValues(t *testing.T) {
	tests := []struct {
		name  string
		paths [][]string
		want  map[string]any
	}{
		{name: "none", want: values()},
		{name: "a value, a list and a map are masked whole", paths: [][]string{{"db", "password"}, {"hosts"}, {"tls"}},
			want: map[string]any{
				"db":    map[string]any{"user": "app", "password": Mask, "host": "db.local", "port": float64(54321)},
				"hosts": Mask, "tls": Mask, "name": "web",
			}},
		{name: "a path the values do not hold is skipped", paths: [][]string{{"db", "missing"}, {"name", "deeper"}, {"nothing", "here"}},
			want: values()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := values()
			got := Values(vals, tt.paths)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(values(), vals); diff != "" {
				t.Errorf("Values changed its input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		name  string
		paths [][]string
		want  []string
	}{
		{name: "strings and numbers, the longest first; short ones, booleans and nulls left out",
			paths: [][]string{{"db"}, {"tls"}, {"hosts"}},
			want:  []string{"-----BEGIN KEY-----", "a.example", "b.example", "db.local", "Hunter2", "54321"}},
		{name: "each once", paths: [][]string{{"db", "password"}, {"db", "password"}}, want: []string{"Hunter2"}},
		{name: "none", paths: [][]string{{"missing"}, {}}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Strings(values(), tt.paths)); diff != "" {
				t.Errorf("Strings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErr(t *testing.T) {
	base := errors.New(`template: app/templates/cm.yaml:1: refused: Hunter2-s3cret and in-clear`)
	err := Err(base, []string{"Hunter2-s3cret"})
	if got := err.Error(); strings.Contains(got, "Hunter2") || !strings.Contains(got, Mask) || !strings.Contains(got, "in-clear") {
		t.Errorf("Err = %q, want the secret masked and the rest kept", got)
	}
	if !errors.Is(err, base) {
		t.Error("the masked error does not wrap the original")
	}
	if Err(base, []string{"not-in-it"}) != base || Err(nil, []string{"x"}) != nil {
		t.Error("Err changed an error that holds no secret, or a nil one")
	}
}
