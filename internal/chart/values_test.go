package chart

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestValueOptionsMerge(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := write("base.yaml", "a: 1\nnested:\n  x: base\n  q: base\n")
	over := write("over.yaml", "nested:\n  q: over\n")
	cert := write("cert.pem", "PEM DATA\n")
	tests := []struct {
		name string
		opts ValueOptions
		want map[string]any
	}{
		{"nothing", ValueOptions{}, map[string]any{}},
		{"files merge in order", ValueOptions{ValueFiles: []string{base, over}}, map[string]any{
			"a": float64(1), "nested": map[string]any{"x": "base", "q": "over"},
		}},
		{"--set types and lists", ValueOptions{Values: []string{"n=3,b=true,s=text,list={a,b},m.k=v"}}, map[string]any{
			"n": int64(3), "b": true, "s": "text", "list": []any{"a", "b"}, "m": map[string]any{"k": "v"},
		}},
		{"--set-string keeps strings", ValueOptions{StringValues: []string{"n=3,b=true"}}, map[string]any{"n": "3", "b": "true"}},
		{"--set-json", ValueOptions{JSONValues: []string{`obj={"k":[1,2]}`, `{"top":true}`}}, map[string]any{
			"obj": map[string]any{"k": []any{float64(1), float64(2)}}, "top": true,
		}},
		{"--set-literal", ValueOptions{LiteralValues: []string{"raw=a,b={c}"}}, map[string]any{"raw": "a,b={c}"}},
		{"--set-file", ValueOptions{FileValues: []string{"tls.cert=" + cert}}, map[string]any{"tls": map[string]any{"cert": "PEM DATA\n"}}},
		{"later flags win: --set over files, --set-string over --set", ValueOptions{
			ValueFiles: []string{base}, Values: []string{"a=2,nested.x=set"}, StringValues: []string{"a=str"},
		}, map[string]any{"a": "str", "nested": map[string]any{"x": "set", "q": "base"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.opts.Merge()
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Merge = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestValueOptionsMergeErrors(t *testing.T) {
	tests := []struct {
		name string
		opts ValueOptions
		// expr, when set, is the malformed expression the error must name, from source.
		source ValueSource
		expr   string
		want   []string
	}{
		{"malformed --set", ValueOptions{Values: []string{"ok=1", "a.b"}}, SetValue, "a.b", []string{"has no value"}},
		{"malformed --set-string", ValueOptions{StringValues: []string{"noval"}}, SetStringValue, "noval", nil},
		{"malformed --set-json value", ValueOptions{JSONValues: []string{"a={bad"}}, SetJSONValue, "a={bad", nil},
		{"malformed --set-json object", ValueOptions{JSONValues: []string{"{bad"}}, SetJSONValue, "{bad", nil},
		{"malformed --set-literal", ValueOptions{LiteralValues: []string{"novalue"}}, SetLiteralValue, "novalue", nil},
		{"missing values file", ValueOptions{ValueFiles: []string{"testdata/none.yaml"}}, "", "", []string{"testdata/none.yaml"}},
		{"missing --set-file", ValueOptions{FileValues: []string{"k=testdata/none.pem"}}, SetFileValue, "k=testdata/none.pem", []string{"testdata/none.pem"}},
		{"invalid values file", ValueOptions{ValueFiles: []string{"testdata/app/templates/NOTES.txt"}}, "", "", []string{"testdata/app/templates/NOTES.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.opts.Merge()
			if err == nil {
				t.Fatal("Merge succeeded, want an error")
			}
			var ve *ValueExprError
			switch {
			case tt.expr != "" && !errors.As(err, &ve):
				t.Errorf("error %q is not a *ValueExprError", err)
			case tt.expr != "" && (ve.Source != tt.source || ve.Expr != tt.expr):
				t.Errorf("error names %s expression %q, want %s %q", ve.Source, ve.Expr, tt.source, tt.expr)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
