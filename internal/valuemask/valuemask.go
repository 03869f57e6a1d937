// Package valuemask hides the values that came from an encrypted values file where berth shows
// values: in a values tree, by their paths, and in rendered objects, by the text they hold. It
// does no I/O.
package valuemask

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Mask is what is shown in place of a masked value.
const Mask = "(masked)"

// MinLen is the length, in bytes, below which a value is not sought in text (Strings): a value
// that short, like a boolean or null, would mask unrelated text.
const MinLen = 4

// Values is a copy of vals in which the value at each of paths (a list of keys) is Mask, a map
// or a list there masked whole; vals is left as it was. A path that vals does not hold is
// skipped.
func Values(vals map[string]any, paths [][]string) map[string]any {
	if len(paths) == 0 {
		return vals
	}
	out := copyMap(vals)
	for _, p := range paths {
		m := out
		for i, k := range p {
			v, ok := m[k]
			if !ok {
				break
			}
			if i == len(p)-1 {
				m[k] = Mask
				break
			}
			next, ok := v.(map[string]any)
			if !ok {
				break
			}
			next = copyMap(next)
			m[k], m = next, next
		}
	}
	return out
}

// copyMap is a shallow copy of m: Values copies each map on a path before it writes into it.
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Strings are the texts of the values at paths in vals, and of every value within a map or a
// list there: strings as they are and numbers as they print, each once, the longest first, so
// that one within another is found after it. Booleans, nulls and texts shorter than MinLen are
// left out.
func Strings(vals map[string]any, paths [][]string) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		default:
			if s, ok := Text(v); ok && len(s) >= MinLen {
				out = append(out, s)
			}
		}
	}
	for _, p := range paths {
		if v, ok := at(vals, p); ok {
			walk(v)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), cmp.Compare(a, b)) })
	return slices.Compact(out)
}

// Text is a string or a number as a rendered object holds it in text; false for any other value.
func Text(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(v), 'f', -1, 32), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	}
	return "", false
}

// at is the value at path p of vals.
func at(vals map[string]any, p []string) (any, bool) {
	var v any = vals
	for _, k := range p {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, len(p) > 0
}

// Error is an error whose message has the texts of values masked; the error it wraps is
// unchanged, for errors.As and errors.Is.
type Error struct {
	msg string
	Err error
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.Err }

// Err is err with each of texts (Strings: the longest first) masked in its message; err itself
// when it is nil or its message holds none of them.
func Err(err error, texts []string) error {
	if err == nil || len(texts) == 0 {
		return err
	}
	msg := err.Error()
	masked := msg
	for _, s := range texts {
		masked = strings.ReplaceAll(masked, s, Mask)
	}
	if masked == msg {
		return err
	}
	return &Error{msg: masked, Err: err}
}
