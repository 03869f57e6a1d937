package chart

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// schemaURL is where a chart's values.schema.json is compiled from, as Helm names it: a relative
// $ref resolves against it.
const schemaURL = "file:///values.schema.json"

// SchemaError is values that do not meet the values.schema.json of a chart or of its subcharts.
// Its message is Helm's, which quotes the offending values ("'Sup3r-S3cret!' does not match
// pattern ..."); Redacted says the same without any value.
type SchemaError struct {
	// Violations are what the values violate: a path and a keyword each, in Helm's order of the
	// charts, then by path and keyword.
	Violations []SchemaViolation
	// Problems are the charts whose values could not be checked, and why, without any value: a
	// schema that does not compile, a subchart's values that are not a map.
	Problems []string
	// helm is Helm's message.
	helm string
}

// SchemaViolation is one rule of a schema that a value breaks.
type SchemaViolation struct {
	// Chart is the chart whose schema it is.
	Chart string
	// Path is the JSON pointer of the value in that chart's values ("" is the values
	// themselves); for a missing required property, the pointer the property would have.
	Path string
	// Keyword is the schema keyword broken: pattern, maxLength, required, type, ...
	Keyword string
}

func (e *SchemaError) Error() string {
	return "values don't meet the specifications of the schema(s) in the following chart(s):\n" + e.helm
}

// Redacted is the error's message without any value: each violation's chart, path and keyword.
func (e *SchemaError) Redacted() string {
	var parts []string
	chart, path := "", "\x00"
	for _, v := range e.Violations {
		switch {
		case v.Chart != chart:
			parts = append(parts, fmt.Sprintf("chart %s: '%s': %s", v.Chart, v.Path, v.Keyword))
		case v.Path != path:
			parts = append(parts, fmt.Sprintf("'%s': %s", v.Path, v.Keyword))
		default:
			parts[len(parts)-1] += ", " + v.Keyword
		}
		chart, path = v.Chart, v.Path
	}
	parts = append(parts, e.Problems...)
	return "values don't meet the schema(s) (values left out): " + strings.Join(parts, "; ")
}

// validateValues checks vals, a chart's coalesced values, against the values.schema.json of ch
// and of each of its (enabled) subcharts, exactly as Helm's install and upgrade do: the same
// loaders (a $ref to an http, https or file URL is loaded) and the same message. Violations are a
// *SchemaError.
func validateValues(ch *chartv2.Chart, vals map[string]any) error {
	e := &SchemaError{}
	var b strings.Builder
	e.validate(&b, ch, vals, helmLoader(map[string]bool{}))
	if b.Len() == 0 {
		return nil
	}
	e.helm = b.String()
	return e
}

// validate writes to b what Helm's util.ValidateAgainstSchema writes for ch and vals, and records
// the same failures in e.
func (e *SchemaError) validate(b *strings.Builder, ch *chartv2.Chart, vals map[string]any, loader jsonschema.URLLoader) {
	if ch.Schema != nil {
		if err := validateOne(ch.Schema, vals, loader); err != nil {
			fmt.Fprintf(b, "%s:\n", ch.Name())
			var verr *jsonschema.ValidationError
			switch v, ok := err.(*violated); {
			case ok && errors.As(v.err, &verr):
				// As Helm's JSONSchemaValidationError prints it.
				b.WriteString(strings.TrimPrefix(v.err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n") + "\n")
				e.Violations = append(e.Violations, violations(ch.Name(), verr)...)
			case ok:
				b.WriteString(strings.TrimPrefix(v.err.Error(), "jsonschema validation failed with '"+schemaURL+"#'\n") + "\n")
				e.Problems = append(e.Problems, fmt.Sprintf("chart %s: the values could not be checked against its schema", ch.Name()))
			default:
				b.WriteString(err.Error())
				e.Problems = append(e.Problems, fmt.Sprintf("chart %s: %s", ch.Name(), problem(err)))
			}
		}
	}
	for _, sub := range ch.Dependencies() {
		raw, ok := vals[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subVals, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(b, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			e.Problems = append(e.Problems, fmt.Sprintf("chart %s: its values are a %T, not a map", sub.Name(), raw))
			continue
		}
		e.validate(b, sub, subVals, loader)
	}
}

// problem says, without any value, why values could not be checked against a schema.
func problem(err error) string {
	var panicked *schemaPanic
	if errors.As(err, &panicked) {
		return "the values could not be checked against its schema"
	}
	// The schema's own errors: they quote the schema, not the values.
	return firstLine(err.Error())
}

// schemaPanic is a panic of the schema validator, as Helm reports it.
type schemaPanic struct{ value any }

func (p *schemaPanic) Error() string { return fmt.Sprintf("unable to validate schema: %s", p.value) }

// validateOne validates vals against one schema, compiled with loader, as Helm's
// util.ValidateAgainstSingleSchema does; values that do not meet it are a *violated, a schema
// that does not compile its compiler's error.
func validateOne(schema []byte, vals map[string]any, loader jsonschema.URLLoader) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &schemaPanic{value: r}
		}
	}()
	compiled, err := compileSchema(schema, loader)
	if err != nil {
		return err
	}
	if err := compiled.Validate(vals); err != nil {
		return &violated{err: err}
	}
	return nil
}

// violated is values that do not meet a schema that compiled, as the validator says.
type violated struct{ err error }

func (v *violated) Error() string { return v.err.Error() }

// compileSchema compiles a chart's values.schema.json, loading what it refers to with loader.
// The compiler loads every schema referred to, directly or not, before it returns.
func compileSchema(schema []byte, loader jsonschema.URLLoader) (*jsonschema.Schema, error) {
	// UnmarshalJSON keeps numbers precise, as the values' parser does.
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(loader)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// violations are the leaves of a validation error: the rules broken, by path and keyword, sorted
// and without duplicates.
func violations(chart string, verr *jsonschema.ValidationError) []SchemaViolation {
	var out []SchemaViolation
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}
			return
		}
		out = append(out, leafViolations(chart, v)...)
	}
	walk(verr)
	slices.SortFunc(out, func(a, b SchemaViolation) int {
		return strings.Compare(a.Path+"\x00"+a.Keyword, b.Path+"\x00"+b.Keyword)
	})
	return slices.Compact(out)
}

// leafViolations is one broken rule: a missing property (whose name comes from the schema) or an
// unexpected one (whose name is a key of the values, as paths are) at its own path.
func leafViolations(chart string, v *jsonschema.ValidationError) []SchemaViolation {
	at := func(names ...string) []SchemaViolation {
		keyword := v.ErrorKind.KeywordPath()[0]
		out := make([]SchemaViolation, 0, len(names))
		for _, n := range names {
			out = append(out, SchemaViolation{Chart: chart, Path: pointer(append(slices.Clone(v.InstanceLocation), n)), Keyword: keyword})
		}
		return out
	}
	switch k := v.ErrorKind.(type) {
	case *kind.Required:
		return at(k.Missing...)
	case *kind.DependentRequired:
		return at(k.Missing...)
	case *kind.Dependency:
		return at(k.Missing...)
	case *kind.AdditionalProperties:
		return at(k.Properties...)
	}
	keyword := "false schema"
	if kw := v.ErrorKind.KeywordPath(); len(kw) > 0 {
		keyword = kw[0]
	}
	return []SchemaViolation{{Chart: chart, Path: pointer(v.InstanceLocation), Keyword: keyword}}
}

// pointer is the JSON pointer of a path of keys and list indexes.
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(p))
	}
	return b.String()
}

// SchemaRefError says a chart's values.schema.json refers to a schema at URL, which
// CheckSchemaRefs does not load: an http, https or file URL.
type SchemaRefError struct {
	Chart, URL string
}

func (e *SchemaRefError) Error() string {
	return fmt.Sprintf("chart %s: values.schema.json refers to %s, and schemas are not loaded from http, https or file URLs", e.Chart, e.URL)
}

// SchemaCompileError says a chart's values.schema.json does not compile.
type SchemaCompileError struct {
	Chart string
	Err   error
}

func (e *SchemaCompileError) Error() string {
	return fmt.Sprintf("chart %s: values.schema.json: %v", e.Chart, e.Err)
}

func (e *SchemaCompileError) Unwrap() error { return e.Err }

// CheckSchemaRefs compiles the values.schema.json of ch and of each of its subcharts, enabled or
// not, without a request or a file read: a reference to an http, https or file URL (by $ref,
// $dynamicRef or $schema, or relative to the schema's own file URL) is a *SchemaRefError. A schema
// that does not compile otherwise is a *SchemaCompileError. A schema a chart holds but does not
// refer to is not compiled, here or by Render. Once it passed, Render compiles the same schemas
// (the compiler loads every schema referred to before it validates) without loading anything
// either.
func CheckSchemaRefs(ch *chartv2.Chart) error {
	if ch.Schema != nil {
		// The compiler's errors do not unwrap what a loader returned: the loader keeps it.
		refuse := &refusal{chart: ch.Name()}
		_, err := compileSchema(ch.Schema, jsonschema.SchemeURLLoader{"file": refuse, "http": refuse, "https": refuse, "urn": urnLoader{}})
		switch {
		case refuse.refused != nil:
			return refuse.refused
		case err != nil:
			return &SchemaCompileError{Chart: ch.Name(), Err: err}
		}
	}
	for _, sub := range ch.Dependencies() {
		if err := CheckSchemaRefs(sub); err != nil {
			return err
		}
	}
	return nil
}

// refusal is a loader that loads nothing, and keeps the first URL it was asked for.
type refusal struct {
	chart   string
	refused *SchemaRefError
}

func (r *refusal) Load(url string) (any, error) {
	err := &SchemaRefError{Chart: r.chart, URL: url}
	if r.refused == nil {
		r.refused = err
	}
	return nil, err
}

// helmLoader loads what a schema refers to as Helm's loader does: files, http and https URLs
// (with a 15-second timeout and the environment's proxy), and URNs by util.URNResolver, with
// Helm's warning once per URN in warned.
func helmLoader(warned map[string]bool) jsonschema.URLLoader {
	web := util.HTTPURLLoader(http.Client{
		Timeout:   15 * time.Second,
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{}},
	})
	return jsonschema.SchemeURLLoader{"file": jsonschema.FileLoader{}, "http": &web, "https": &web, "urn": urnLoader{warned: warned}}
}

// urnLoader resolves urn: references with Helm's util.URNResolver; one it cannot resolve is the
// schema true. With warned, it says so as Helm does (with slog's default logger), once per URN.
type urnLoader struct {
	warned map[string]bool
}

func (l urnLoader) Load(url string) (any, error) {
	if doc, err := util.URNResolver(url); err == nil && doc != nil {
		return doc, nil
	}
	if l.warned != nil && !l.warned[url] {
		l.warned[url] = true
		slog.Warn("unresolved URN reference ignored; using permissive schema", "urn", url)
	}
	return jsonschema.UnmarshalJSON(strings.NewReader("true"))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
