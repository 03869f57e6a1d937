package inputs

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/berthdev/berth/api/v1alpha1"
)

func TestMergeValues(t *testing.T) {
	file := func(name, data string) ValuesSource {
		return ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "ConfigMap", Name: name, Key: "values.yaml"}, Data: []byte(data)}
	}
	at := func(path, data string) ValuesSource {
		return ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "Secret", Name: "s", Key: "k", TargetPath: path}, Data: []byte(data)}
	}
	tests := []struct {
		name    string
		sources []ValuesSource
		spec    map[string]any
		want    map[string]any
	}{
		{name: "nothing", want: map[string]any{}},
		{name: "spec only", spec: map[string]any{"a": 1.0}, want: map[string]any{"a": 1.0}},
		{name: "files deep-merged in order, spec last",
			sources: []ValuesSource{
				file("base", "image: {repo: web, tag: '1'}\nreplicas: 1\nlist: [1, 2]\n"),
				file("prod", "image: {tag: '2'}\nlist: [3]\n"),
			},
			spec: map[string]any{"replicas": 3.0},
			want: map[string]any{"image": map[string]any{"repo": "web", "tag": "2"}, "replicas": 3.0, "list": []any{3.0}}},
		{name: "targetPath sets the content as one string, as it is",
			sources: []ValuesSource{file("base", "db: {host: x, port: 1}\n"), at("db.port", "5432"), at("db.password", "s3cr=t")},
			want:    map[string]any{"db": map[string]any{"host": "x", "port": "5432", "password": "s3cr=t"}}},
		{name: "a targetPath content is never parsed",
			sources: []ValuesSource{
				at("a", "sec,ret"), at("b", "P4ss,x["), at("c", "{x,y}"), at("d", `"quoted"`), at("e", "null"),
				at("f", "k=v,k2=v2"), at("g", "line 1\nline 2\n"), at("h", `back\slash`), at("i", ""),
			},
			want: map[string]any{
				"a": "sec,ret", "b": "P4ss,x[", "c": "{x,y}", "d": `"quoted"`, "e": "null",
				"f": "k=v,k2=v2", "g": "line 1\nline 2\n", "h": `back\slash`, "i": "",
			}},
		{name: "targetPath paths: dots, escaped dots, list items",
			sources: []ValuesSource{
				file("base", "list: [a, b, c]\nscalar: x\n"),
				at(`annotations.example\.com/key`, "v"), at("list[1]", "B"), at("list[4].name", "n"), at("grid[0][1]", "g"),
				at("scalar.key", "replaces the scalar"),
			},
			want: map[string]any{
				"annotations": map[string]any{"example.com/key": "v"},
				"list":        []any{"a", "B", "c", nil, map[string]any{"name": "n"}},
				"grid":        []any{[]any{nil, "g"}},
				"scalar":      map[string]any{"key": "replaces the scalar"},
			}},
		{name: "a later file overrides a targetPath",
			sources: []ValuesSource{at("a.b", "1"), file("f", "a: {b: 2}\n")},
			want:    map[string]any{"a": map[string]any{"b": 2.0}}},
		{name: "missing optional sources are skipped",
			sources: []ValuesSource{{Ref: v1alpha1.ValuesReference{Kind: "ConfigMap", Name: "gone", Key: "values.yaml"}, Missing: true}, file("f", "a: 1\n")},
			want:    map[string]any{"a": 1.0}},
		{name: "an empty file is no values", sources: []ValuesSource{file("f", "")}, spec: map[string]any{"a": "x"},
			want: map[string]any{"a": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := MergeValues("team-a", tt.sources, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestMergeValuesErrors(t *testing.T) {
	const secret = "Sup3r-S3cret-canary"
	file := func(data string) ValuesSource {
		return ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "Secret", Name: "f", Key: "values.yaml"}, Data: []byte(data)}
	}
	at := func(path string) ValuesSource {
		return ValuesSource{Ref: v1alpha1.ValuesReference{Kind: "Secret", Name: "f", Key: "k", TargetPath: path}, Data: []byte(secret)}
	}
	tests := []struct {
		name   string
		source ValuesSource
		want   string
	}{
		{"not YAML", file("a: 1\npassword: [" + secret + "\n"), "Secret/team-a/f key values.yaml: not a values file: YAML error at line 2"},
		{"a YAML error that quotes the content", file("? [" + secret + "]\n: 1\n"), "not a values file: not a YAML map of values"},
		{"a tag that does not fit", file("a: !!int " + secret + "\n"), "not a values file: not a YAML map of values"},
		{"not a map", file("- " + secret + "\n"), "not a values file: not a YAML map of values"},
		{"a bad list index", at("a[x]"), `targetPath "a[x]": has the list index [x]`},
		{"a negative list index", at("a[-1]"), `targetPath "a[-1]": has the list index [-1]`},
		{"an empty key", at("a..b"), `targetPath "a..b": has an empty key`},
		{"a leading index", at("[0]"), `targetPath "[0]": has an empty key`},
		{"a trailing dot", at("a."), `targetPath "a.": has an empty key`},
		{"text after an index", at("a[0]b"), `targetPath "a[0]b": has 'b' after a list index`},
		{"no closing bracket", at("a[0"), `targetPath "a[0": has a [ without ]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MergeValues("team-a", []ValuesSource{tt.source}, nil)
			var ve *ValuesError
			if !errors.As(err, &ve) || ve.Name != "f" || ve.Namespace != "team-a" {
				t.Fatalf("got %v, want a ValuesError naming the object", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "Sup3r") {
				t.Errorf("error %q holds the content", err)
			}
		})
	}
}
