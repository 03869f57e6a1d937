package chart

import (
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/strvals"
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
// --set-string, --set-file and --set-literal. A malformed expression is an error naming its flag
// and the expression.
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

// check parses every expression on its own so that an error names the one at fault; Helm's own
// messages do not always say which.
func (o ValueOptions) check() error {
	noFile := func([]rune) (any, error) { return "", nil }
	flags := []struct {
		flag  string
		exprs []string
		parse func(string, map[string]any) error
	}{
		{"--set-json", o.JSONValues, func(s string, m map[string]any) error {
			if t := strings.TrimSpace(s); t != "" && t[0] == '{' {
				return nil // a JSON object: Helm's own error names it
			}
			return strvals.ParseJSON(s, m)
		}},
		{"--set", o.Values, strvals.ParseInto},
		{"--set-string", o.StringValues, strvals.ParseIntoString},
		{"--set-file", o.FileValues, func(s string, m map[string]any) error {
			return strvals.ParseIntoFile(s, m, noFile)
		}},
		{"--set-literal", o.LiteralValues, strvals.ParseLiteralInto},
	}
	for _, f := range flags {
		for _, expr := range f.exprs {
			if err := f.parse(expr, map[string]any{}); err != nil {
				return fmt.Errorf("%s %q: %w", f.flag, expr, err)
			}
		}
	}
	return nil
}
