package chart

import (
	"fmt"
	"os"
	"strings"

	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/berthdev/berth/internal/yamlbound"
)

// ValueOptions are the values a user passes on the command line, as Helm's flags take them.
// Files are read from the local file system ("-" is standard input); URLs are not fetched.
type ValueOptions struct {
	ValueFiles    []string // -f/--values
	Values        []string // --set
	StringValues  []string // --set-string
	FileValues    []string // --set-file
	JSONValues    []string // --set-json
	LiteralValues []string // --set-literal
}

// Merge merges the values exactly as Helm does: value files in order, then --set-json, --set,
// --set-string, --set-file and --set-literal. A malformed expression is a *ValueExprError.
func (o ValueOptions) Merge() (map[string]any, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	opts := values.Options{
		ValueFiles:    o.ValueFiles,
		StringValues:  o.StringValues,
		Values:        o.Values,
		FileValues:    o.FileValues,
		JSONValues:    o.JSONValues,
		LiteralValues: o.LiteralValues,
	}
	vals, err := opts.MergeValues(nil)
	if err != nil {
		return nil, fmt.Errorf("merge values: %w", err)
	}
	return vals, nil
}

// ValueSource is where a value expression came from: Helm's --set and its kin, named as the
// options of ValueOptions are.
type ValueSource string

const (
	SetValue        ValueSource = "set"
	SetStringValue  ValueSource = "set-string"
	SetFileValue    ValueSource = "set-file"
	SetJSONValue    ValueSource = "set-json"
	SetLiteralValue ValueSource = "set-literal"
)

// ValueExprError is a value expression that does not parse.
type ValueExprError struct {
	Source ValueSource
	Expr   string
	Err    error
}

func (e *ValueExprError) Error() string {
	return fmt.Sprintf("%s expression %q: %v", e.Source, e.Expr, e.Err)
}

func (e *ValueExprError) Unwrap() error { return e.Err }

// check parses every expression on its own so that an error names the one at fault; Helm's own
// messages do not always say which.
func (o ValueOptions) check() error {
	noFile := func([]rune) (any, error) { return "", nil }
	sources := []struct {
		source ValueSource
		exprs  []string
		parse  func(string, map[string]any) error
	}{
		{SetJSONValue, o.JSONValues, func(s string, m map[string]any) error {
			if t := strings.TrimSpace(s); t != "" && t[0] == '{' {
				return nil // a JSON object: Helm's own error names it
			}
			return strvals.ParseJSON(s, m)
		}},
		{SetValue, o.Values, strvals.ParseInto},
		{SetStringValue, o.StringValues, strvals.ParseIntoString},
		{SetFileValue, o.FileValues, func(s string, m map[string]any) error {
			return strvals.ParseIntoFile(s, m, noFile)
		}},
		{SetLiteralValue, o.LiteralValues, strvals.ParseLiteralInto},
	}
	for _, f := range o.ValueFiles {
		if err := checkValuesFile(f); err != nil {
			return err
		}
	}
	for _, src := range sources {
		for _, expr := range src.exprs {
			if err := src.parse(expr, map[string]any{}); err != nil {
				return &ValueExprError{Source: src.source, Expr: expr, Err: err}
			}
		}
	}
	return nil
}

// ValuesFileError is a values file (-f) that cannot be taken.
type ValuesFileError struct {
	Path string
	Err  error
}

func (e *ValuesFileError) Error() string { return fmt.Sprintf("values file %s: %v", e.Path, e.Err) }

func (e *ValuesFileError) Unwrap() error { return e.Err }

// checkValuesFile refuses the values file path when its YAML aliases expand it past
// yamlbound.Local: Helm's reader would expand them all. Standard input ("-") is read once, by
// Helm, and a file that cannot be read is left for Helm to name.
func checkValuesFile(path string) error {
	if path == "-" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if err := yamlbound.Check(data, yamlbound.Local); err != nil {
		return &ValuesFileError{Path: path, Err: err}
	}
	return nil
}
