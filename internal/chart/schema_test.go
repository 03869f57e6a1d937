package chart

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// canary is a secret value: no redacted message may hold it, or any part of it.
const canary = "Sup3r-S3cret-canary-x7q"

// memChart is a chart of one ConfigMap template, with a schema when schema is not empty.
func memChart(name, schema, template string) *chartv2.Chart {
	if template == "" {
		template = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {p: {{ .Values.password | quote }}}\n"
	}
	ch := &chartv2.Chart{
		Metadata:  &chartv2.Metadata{APIVersion: "v2", Name: name, Version: "0.1.0"},
		Values:    map[string]any{"password": "none"},
		Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte(template)}},
	}
	if schema != "" {
		ch.Schema = []byte(schema)
	}
	return ch
}

const passwordSchema = `{
  "type": "object",
  "properties": {
    "password": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
    "port": {"type": "integer", "minimum": 1},
    "mode": {"enum": ["a", "b"]},
    "db": {"type": "object", "additionalProperties": false, "required": ["host"],
           "properties": {"host": {"type": "string"}}}
  },
  "required": ["password"]
}`

func render(t *testing.T, ch *chartv2.Chart, vals map[string]any) error {
	t.Helper()
	_, err := Render(context.Background(), ch, vals, RenderOptions{ReleaseName: "rel", Namespace: "ns"})
	return err
}

func TestSchemaErrorIsRedacted(t *testing.T) {
	sub := memChart("sub", passwordSchema, "")
	parent := memChart("parent", `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`, "")
	parent.AddDependency(sub)
	err := render(t, parent, map[string]any{
		"replicas": canary,
		"sub": map[string]any{
			"password": canary, "port": 0, "mode": canary,
			"db": map[string]any{"extra": canary},
		},
	})
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("Render: %v, want a *SchemaError", err)
	}
	want := []SchemaViolation{
		{Chart: "parent", Path: "/replicas", Keyword: "type"},
		{Chart: "sub", Path: "/db/extra", Keyword: "additionalProperties"},
		{Chart: "sub", Path: "/db/host", Keyword: "required"},
		{Chart: "sub", Path: "/mode", Keyword: "enum"},
		{Chart: "sub", Path: "/password", Keyword: "maxLength"},
		{Chart: "sub", Path: "/password", Keyword: "pattern"},
		{Chart: "sub", Path: "/port", Keyword: "minimum"},
	}
	if diff := cmp.Diff(want, se.Violations); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	redacted := se.Redacted()
	wantRedacted := "values don't meet the schema(s) (values left out): chart parent: '/replicas': type; " +
		"chart sub: '/db/extra': additionalProperties; '/db/host': required; '/mode': enum; '/password': maxLength, pattern; '/port': minimum"
	if redacted != wantRedacted {
		t.Errorf("Redacted() =\n%s\nwant\n%s", redacted, wantRedacted)
	}
	assertNoCanary(t, "Redacted()", redacted)
	// The message for the user who gave the values is Helm's, values and all.
	if !strings.Contains(err.Error(), "'"+canary+"' does not match pattern '^[a-z]+$'") {
		t.Errorf("Error() is not Helm's detailed message:\n%s", err)
	}
}

func TestSchemaErrorKeepsHelmsMessage(t *testing.T) {
	err := render(t, memChart("app", passwordSchema, ""), map[string]any{"password": "Sup3r-S3cret!", "port": 0})
	// Helm v4.3's message, word for word (the order of violations within it is Helm's).
	for _, want := range []string{
		"chart app: values don't meet the specifications of the schema(s) in the following chart(s):\napp:\n",
		"- at '/port': minimum: got 0, want 1\n",
		"- at '/password': validation failed\n  - at '/password': maxLength: got 13, want 8\n  - at '/password': 'Sup3r-S3cret!' does not match pattern '^[a-z]+$'\n",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error\n%s\ndoes not hold\n%s", err, want)
		}
	}
	if err := render(t, memChart("app", passwordSchema, ""), map[string]any{"password": "ok"}); err != nil {
		t.Errorf("values that meet the schema: %v", err)
	}
	opts := RenderOptions{ReleaseName: "rel", SkipSchemaValidation: true}
	if _, err := Render(context.Background(), memChart("app", passwordSchema, ""), map[string]any{"port": 0}, opts); err != nil {
		t.Errorf("SkipSchemaValidation: %v", err)
	}
}

func TestSchemaProblemsAreRedacted(t *testing.T) {
	// A schema that does not compile: its compiler's message quotes the schema, not the values.
	err := render(t, memChart("app", `{"properties": {"password": {"pattern": "["}}}`, ""), map[string]any{"password": canary})
	var se *SchemaError
	if !errors.As(err, &se) || len(se.Problems) != 1 || len(se.Violations) != 0 {
		t.Fatalf("Render: %v, want a *SchemaError with one problem", err)
	}
	if want := "values don't meet the schema(s) (values left out): chart app: "; !strings.HasPrefix(se.Redacted(), want) {
		t.Errorf("Redacted() = %s, want it to start with %q", se.Redacted(), want)
	}
	assertNoCanary(t, "Redacted()", se.Redacted())
}

func TestCheckSchemaRefsRefusesRemoteAndFileRefs(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"type": "string"}`))
	}))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type": "string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	prop := func(s string) string { return `{"type": "object", "properties": {"password": ` + s + `}}` }
	tests := []struct {
		name, schema, url string
	}{
		{"http $ref", prop(`{"$ref": "` + srv.URL + `/s.json"}`), srv.URL + "/s.json"},
		{"https $ref", prop(`{"$ref": "https://schemas.example.test/s.json"}`), "https://schemas.example.test/s.json"},
		{"file $ref", prop(`{"$ref": "file://` + file + `"}`), "file://" + file},
		{"relative $ref resolves to a file", prop(`{"$ref": "other.json#/x"}`), "file:///other.json"},
		{"$ref relative to an http $id", `{"$id": "` + srv.URL + `/root.json", "properties": {"p": {"$ref": "s.json"}}}`, srv.URL + "/s.json"},
		{"unknown $schema", `{"$schema": "` + srv.URL + `/meta.json", "type": "object"}`, srv.URL + "/meta.json"},
		{"in a $defs referred to", `{"$defs": {"x": {"$ref": "` + srv.URL + `/s.json"}}, "properties": {"p": {"$ref": "#/$defs/x"}}}`, srv.URL + "/s.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSchemaRefs(memChart("app", tt.schema, ""))
			var ref *SchemaRefError
			if !errors.As(err, &ref) || ref.Chart != "app" || ref.URL != tt.url {
				t.Errorf("CheckSchemaRefs: %v, want a *SchemaRefError of chart app for %s", err, tt.url)
			}
		})
	}
	t.Run("in a subchart", func(t *testing.T) {
		parent := memChart("parent", "", "")
		parent.AddDependency(memChart("sub", prop(`{"$ref": "`+srv.URL+`/s.json"}`), ""))
		var ref *SchemaRefError
		if err := CheckSchemaRefs(parent); !errors.As(err, &ref) || ref.Chart != "sub" {
			t.Errorf("CheckSchemaRefs: %v, want a *SchemaRefError of chart sub", err)
		}
	})
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests made", n)
	}
}

func TestCheckSchemaRefsAllowsLocalSchemas(t *testing.T) {
	for name, schema := range map[string]string{
		"draft 2020-12":        `{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}`,
		"draft-07":             `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"p": {"type": "string"}}, "properties": {"password": {"$ref": "#/definitions/p"}}}`,
		"$defs":                `{"$defs": {"p": {"type": "string"}}, "properties": {"password": {"$ref": "#/$defs/p"}}}`,
		"the schema's own URL": `{"$defs": {"p": {"type": "string"}}, "properties": {"password": {"$ref": "file:///values.schema.json#/$defs/p"}}}`,
		"urn":                  `{"properties": {"password": {"$ref": "urn:example:password"}}}`,
		// Render does not compile it either.
		"a $defs not referred to": `{"$defs": {"x": {"$ref": "https://schemas.example.test/s.json"}}}`,
		"none":                    "",
	} {
		if err := CheckSchemaRefs(memChart("app", schema, "")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var compile *SchemaCompileError
	if err := CheckSchemaRefs(memChart("app", `{"properties": {"p": {"pattern": "["}}}`, "")); !errors.As(err, &compile) {
		t.Errorf("a schema that does not compile: %v, want a *SchemaCompileError", err)
	}
}

func TestTemplateErrorIsRedacted(t *testing.T) {
	tests := []struct {
		name, template string
		location       string
	}{
		{"fail", "x: {{ fail (printf \"bad password %s\" .Values.password) }}\n", "cm/templates/cm.yaml:1:6"},
		{"required", "a: 1\nx: {{ required (printf \"password %s refused\" .Values.password) .Values.missing }}\n", "cm/templates/cm.yaml:2:6"},
		{"execution error", "x: {{ .Values.password.x.y }}\n", "cm/templates/cm.yaml:1:13"},
		{"parse error", "x: {{ .Values.password | nosuchfunc }}\n", "cm/templates/cm.yaml:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := render(t, memChart("cm", "", tt.template), map[string]any{"password": canary})
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("Render: %v, want a *TemplateError", err)
			}
			if te.Location() != tt.location {
				t.Errorf("location %q, want %q (error %v)", te.Location(), tt.location, err)
			}
			assertNoCanary(t, "Redacted()", te.Redacted())
			if !strings.Contains(te.Redacted(), tt.location) {
				t.Errorf("Redacted() = %s, want the location", te.Redacted())
			}
		})
	}
}

func TestCoalesceErrorIsRedacted(t *testing.T) {
	parent := memChart("parent", "", "")
	parent.AddDependency(memChart("sub", "", ""))
	err := render(t, parent, map[string]any{"sub": canary})
	var ce *CoalesceError
	if !errors.As(err, &ce) {
		t.Fatalf("Render: %v, want a *CoalesceError", err)
	}
	if !strings.Contains(err.Error(), canary) {
		t.Errorf("Error() %q is not Helm's message", err)
	}
	assertNoCanary(t, "Redacted()", ce.Redacted())
	if want := "the value of sub is not a map"; !strings.Contains(ce.Redacted(), want) {
		t.Errorf("Redacted() = %s, want %q", ce.Redacted(), want)
	}
}

func assertNoCanary(t *testing.T, what, s string) {
	t.Helper()
	for _, part := range []string{canary, "Sup3r", "canary-x7q"} {
		if strings.Contains(s, part) {
			t.Errorf("%s holds the secret value: %s", what, s)
		}
	}
}
