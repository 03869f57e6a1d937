package inputs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/yamlbound"
)

// DefaultValuesKey is the key a valuesFrom reference reads when it names none.
const DefaultValuesKey = "values.yaml"

// ValuesSource is what one valuesFrom reference read: the key's content, or nothing when an
// optional object or key is missing.
type ValuesSource struct {
	Ref     v1alpha1.ValuesReference
	Data    []byte
	Missing bool
}

// ValuesError says that the content of a valuesFrom reference cannot be used as values. It never
// holds the content, nor a parser's message that could quote it.
type ValuesError struct {
	Kind, Namespace, Name, Key string
	// Problem says what is wrong, without the content: "not a values file: YAML error at line 3".
	Problem string
	// Err is the error behind Problem, when it is one of berth's own (a *LimitError).
	Err error
}

func (e *ValuesError) Unwrap() error { return e.Err }

// Limits of the values a Release gives. The API server bounds a ConfigMap's or Secret's data
// (1 MiB) and a Release's spec.values (the size of an object it stores); these hold whatever it
// is configured with.
const (
	// MaxValuesDocumentBytes bounds one valuesFrom key's content, read before it is parsed.
	MaxValuesDocumentBytes = 1 << 20
	// MaxValuesBytes bounds the content of all the valuesFrom keys of a Release together.
	MaxValuesBytes = 4 << 20
	// MaxTargetPathLength bounds a targetPath's length, in bytes (the CRD says it too).
	MaxTargetPathLength = 250
	// MaxPathIndex bounds a list index of a targetPath, as helm's --set bounds it.
	MaxPathIndex = 65536
	// MaxPathItems bounds the list items one targetPath may add: its indexes, each plus one,
	// added up (one index of MaxPathIndex, or many small ones, never several large ones).
	MaxPathItems = MaxPathIndex + 1
)

// LimitError says that something a Release gives is larger than a limit of the controller.
type LimitError struct {
	// What names it: `targetPath "a[1]"`, "the content", "the values of spec.values and
	// spec.valuesFrom together".
	What string
	// Measure is the unit counted ("bytes"), or "" for a number (an index, a count).
	Measure string
	// Size is what was found, or -1 when it is too large to say.
	Size  int
	Limit int
}

func (e *LimitError) Error() string {
	unit := ""
	if e.Measure != "" {
		unit = " " + e.Measure
	}
	if e.Size < 0 {
		return fmt.Sprintf("%s is more than the %d%s allowed", e.What, e.Limit, unit)
	}
	return fmt.Sprintf("%s is %d%s, more than the %d allowed", e.What, e.Size, unit, e.Limit)
}

func (e *ValuesError) Error() string {
	return fmt.Sprintf("%s/%s/%s key %s: %s: fix the key's content, or the reference in spec.valuesFrom", e.Kind, e.Namespace, e.Name, e.Key, e.Problem)
}

// ReadValues reads each valuesFrom reference of a Release with r, in order. A reference that is
// not there is a *MissingError that says what to do (without Reason), unless it is optional.
func ReadValues(ctx context.Context, r KeyReader, refs []v1alpha1.ValuesReference) ([]ValuesSource, error) {
	out := make([]ValuesSource, 0, len(refs))
	for _, ref := range refs {
		if ref.Key == "" {
			ref.Key = DefaultValuesKey
		}
		data, err := r.Read(ctx, ref.Kind, ref.Name, ref.Key)
		var missing *MissingError
		switch {
		case errors.As(err, &missing) && ref.Optional:
			out = append(out, ValuesSource{Ref: ref, Missing: true})
			continue
		case errors.As(err, &missing):
			missing.Next = "create it, or mark the reference optional in spec.valuesFrom"
			return nil, missing
		case err != nil:
			return nil, err
		}
		out = append(out, ValuesSource{Ref: ref, Data: data})
	}
	return out, nil
}

// MergeValues merges the values of sources in order, later ones winning, then spec's values
// over them, as Flux's helm-controller does: a key's content is a values file deep-merged into
// what came before, or, with a targetPath, one string set at that path, as it is. ns is the
// sources' namespace, for errors.
//
// Each key's content is at most MaxValuesDocumentBytes, and all of them MaxValuesBytes together,
// checked before any is parsed; a targetPath is bounded as parsePath says.
func MergeValues(ns string, sources []ValuesSource, spec map[string]any) (map[string]any, error) {
	out := map[string]any{}
	total := 0
	for _, s := range sources {
		if s.Missing {
			continue
		}
		fail := func(problem string, err error) error {
			return &ValuesError{Kind: s.Ref.Kind, Namespace: ns, Name: s.Ref.Name, Key: s.Ref.Key, Problem: problem, Err: err}
		}
		total += len(s.Data)
		if len(s.Data) > MaxValuesDocumentBytes {
			err := &LimitError{What: "the content", Measure: "bytes", Size: len(s.Data), Limit: MaxValuesDocumentBytes}
			return nil, fail(err.Error()+": split the values over several keys", err)
		}
		if total > MaxValuesBytes {
			err := &LimitError{What: "the values of spec.valuesFrom up to this key", Measure: "bytes", Size: total, Limit: MaxValuesBytes}
			return nil, fail(err.Error()+": give the chart fewer values", err)
		}
		if s.Ref.TargetPath != "" {
			if err := setPath(out, s.Ref.TargetPath, string(s.Data)); err != nil {
				var limit *LimitError
				problem := fmt.Sprintf("targetPath %q: %v", s.Ref.TargetPath, err)
				if errors.As(err, &limit) {
					return nil, fail(problem+": write a shorter path, with smaller list indexes", limit)
				}
				return nil, fail(problem, nil)
			}
			continue
		}
		if err := yamlbound.Check(s.Data, yamlbound.Tenant); err != nil {
			return nil, fail(err.Error(), err)
		}
		vals, err := common.ReadValues(s.Data)
		if err != nil {
			return nil, fail(notValues(err), nil)
		}
		out = loader.MergeMaps(out, vals)
	}
	return loader.MergeMaps(out, spec), nil
}

// notValues says why content is not a values file, with the line of a YAML error but never the
// parser's message: that can quote the content ("cannot unmarshal !!str `...`", "invalid map key:
// ...").
func notValues(err error) string {
	if n, ok := YAMLLine(err); ok {
		return "not a values file: YAML error at line " + n + " (the content and the parser's message are left out)"
	}
	return "not a values file: not a YAML map of values (the content and the parser's message are left out)"
}

// setPath sets value, as one string and as it is, at path in values: path names keys separated by
// dots, as Flux's targetPath and helm's --set name them ("a.b.c"; a\.b for a key with a dot;
// "list[0]" for an item of a list). value is never parsed: commas, brackets, braces, quotes and
// "=" are part of it. A value in the way that is not a map (or a list, for an index) is replaced.
func setPath(values map[string]any, path, value string) error {
	steps, err := parsePath(path)
	if err != nil {
		return err
	}
	put(values, steps, value)
	return nil
}

// pathStep is a key of a map, or an index of a list.
type pathStep struct {
	key   string
	index int // when key is empty
}

// parsePath splits a targetPath into keys and list indexes. A path longer than
// MaxTargetPathLength, an index above MaxPathIndex, or indexes that would add more than
// MaxPathItems list items together are a *LimitError, before anything is allocated for them.
func parsePath(path string) ([]pathStep, error) {
	if len(path) > MaxTargetPathLength {
		return nil, &LimitError{What: "the path", Measure: "bytes", Size: len(path), Limit: MaxTargetPathLength}
	}
	var steps []pathStep
	items := 0
	var key strings.Builder
	endKey := func() error {
		if key.Len() == 0 {
			return errors.New("has an empty key: name each key, separated by single dots")
		}
		steps = append(steps, pathStep{key: key.String()})
		key.Reset()
		return nil
	}
	for i := 0; i < len(path); i++ {
		switch c := path[i]; c {
		case '\\':
			if i+1 == len(path) {
				return nil, errors.New("ends with \\: escape a dot as \\.")
			}
			i++
			key.WriteByte(path[i])
		case '.':
			if err := endKey(); err != nil {
				return nil, err
			}
		case '[':
			if err := endKey(); err != nil {
				return nil, err
			}
			for {
				end := strings.IndexByte(path[i:], ']')
				if end < 0 {
					return nil, errors.New("has a [ without ]")
				}
				digits := path[i+1 : i+end]
				n, err := strconv.Atoi(digits)
				if err != nil && strings.Trim(digits, "0123456789") == "" && digits != "" {
					// Only digits, too many for an int.
					return nil, &LimitError{What: "the list index [" + digits + "]", Size: -1, Limit: MaxPathIndex}
				}
				if err != nil || n < 0 {
					return nil, fmt.Errorf("has the list index [%s]: write a whole number from 0 to %d", digits, MaxPathIndex)
				}
				if n > MaxPathIndex {
					return nil, &LimitError{What: "the list index [" + digits + "]", Size: -1, Limit: MaxPathIndex}
				}
				if items += n + 1; items > MaxPathItems {
					return nil, &LimitError{What: "the number of list items its indexes add", Size: items, Limit: MaxPathItems}
				}
				steps = append(steps, pathStep{index: n})
				i += end + 1
				if i == len(path) || path[i] != '[' {
					break
				}
			}
			switch {
			case i == len(path):
				return steps, nil
			case path[i] != '.':
				return nil, fmt.Errorf("has %q after a list index: follow it with a dot and a key", path[i])
			case i+1 == len(path):
				return nil, errors.New("ends with a dot")
			}
		default:
			key.WriteByte(c)
		}
	}
	if err := endKey(); err != nil {
		return nil, err
	}
	return steps, nil
}

// put sets value at steps under node, and returns node (or what replaced it).
func put(node any, steps []pathStep, value string) any {
	if len(steps) == 0 {
		return value
	}
	s := steps[0]
	if s.key == "" {
		list, _ := node.([]any)
		for len(list) <= s.index {
			list = append(list, nil)
		}
		list[s.index] = put(list[s.index], steps[1:], value)
		return list
	}
	m, ok := node.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	m[s.key] = put(m[s.key], steps[1:], value)
	return m
}

// DigestOf is the sha256 of values; equal values have equal digests.
func DigestOf(vals map[string]any) (string, error) {
	// encoding/json sorts map keys.
	canonical, err := json.Marshal(vals)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
