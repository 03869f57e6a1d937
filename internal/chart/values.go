package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/berthdev/berth/internal/sopsvalues"
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

// Merged are the values a user passes, merged, and the paths of those that came from a values
// file encrypted with SOPS.
type Merged struct {
	Values map[string]any
	// Encrypted are the paths (lists of keys) of the values the encrypted files held encrypted,
	// sorted, each once; a later file or expression that sets one does not take it off.
	Encrypted [][]string
}

// Merge merges the values exactly as Helm does (see MergeValues).
func (o ValueOptions) Merge() (map[string]any, error) {
	m, err := o.MergeValues()
	return m.Values, err
}

// MergeValues merges the values exactly as Helm does: value files in order, then --set-json,
// --set, --set-string, --set-file and --set-literal. A malformed expression is a
// *ValueExprError. A values file encrypted with SOPS (told by its sops metadata, not its name)
// is decrypted first with the keys the sops CLI would find (SOPS_AGE_KEY_FILE, SOPS_AGE_KEY, the
// user's sops/age/keys.txt, PGP, cloud KMS); one that cannot be is a *ValuesFileError holding
// the *sopsvalues.Error that says why. The paths of the values it held encrypted are Encrypted.
func (o ValueOptions) MergeValues() (Merged, error) {
	if err := o.check(); err != nil {
		return Merged{}, err
	}
	base := map[string]any{}
	var encrypted [][]string
	for _, path := range o.ValueFiles {
		raw, err := readValuesFile(path)
		if err != nil {
			return Merged{}, err
		}
		if format, ok := sopsvalues.Detect(raw); ok {
			for _, p := range sopsvalues.EncryptedPaths(raw) {
				encrypted = append(encrypted, p)
			}
			if raw, err = sopsvalues.Decrypt(raw, format, sopsvalues.Keys{}); err != nil {
				return Merged{}, &ValuesFileError{Path: path, Err: err}
			}
		}
		current, err := loader.LoadValues(bytes.NewReader(raw))
		if err != nil {
			return Merged{}, fmt.Errorf("failed to parse %s: %w", path, err)
		}
		base = loader.MergeMaps(base, current)
	}
	base, err := o.setInto(base)
	if err != nil {
		return Merged{}, fmt.Errorf("merge values: %w", err)
	}
	slices.SortFunc(encrypted, slices.Compare[[]string])
	return Merged{Values: base, Encrypted: slices.CompactFunc(encrypted, slices.Equal[[]string])}, nil
}

// readValuesFile reads the values file path, standard input for "-", as Helm's reader does for
// a local file.
func readValuesFile(path string) ([]byte, error) {
	if strings.TrimSpace(path) == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(path)
}

// setInto sets the value expressions of o into base as Helm does after the values files:
// --set-json, --set, --set-string, --set-file, then --set-literal, and returns the result.
func (o ValueOptions) setInto(base map[string]any) (map[string]any, error) {
	for _, value := range o.JSONValues {
		if t := strings.TrimSpace(value); t != "" && t[0] == '{' {
			var m map[string]any
			if err := json.Unmarshal([]byte(t), &m); err != nil {
				return nil, &ValueExprError{Source: SetJSONValue, Expr: value, Err: err}
			}
			base = loader.MergeMaps(base, m)
			continue
		}
		if err := strvals.ParseJSON(value, base); err != nil {
			return nil, &ValueExprError{Source: SetJSONValue, Expr: value, Err: err}
		}
	}
	for _, value := range o.Values {
		if err := strvals.ParseInto(value, base); err != nil {
			return nil, &ValueExprError{Source: SetValue, Expr: value, Err: err}
		}
	}
	for _, value := range o.StringValues {
		if err := strvals.ParseIntoString(value, base); err != nil {
			return nil, &ValueExprError{Source: SetStringValue, Expr: value, Err: err}
		}
	}
	for _, value := range o.FileValues {
		read := func(rs []rune) (any, error) {
			data, err := readValuesFile(string(rs))
			return string(data), err
		}
		if err := strvals.ParseIntoFile(value, base, read); err != nil {
			return nil, &ValueExprError{Source: SetFileValue, Expr: value, Err: err}
		}
	}
	for _, value := range o.LiteralValues {
		if err := strvals.ParseLiteralInto(value, base); err != nil {
			return nil, &ValueExprError{Source: SetLiteralValue, Expr: value, Err: err}
		}
	}
	return base, nil
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
