package controller

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berthdev/berth/internal/resource"
)

// The functions below work on objects as JSON values: maps, lists, strings, numbers (int64 from
// the API server, float64 from a parsed manifest), booleans and nil.

// pointerTokens splits a JSON pointer (RFC 6901) into its unescaped tokens; false when p is not
// one.
func pointerTokens(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		if strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(t), "~") {
			return nil, false
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens, true
}

// pointerOf is the JSON pointer of tokens.
func pointerOf(tokens []string) string {
	var b strings.Builder
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	for _, t := range tokens {
		b.WriteString("/")
		b.WriteString(esc.Replace(t))
	}
	return b.String()
}

// valueAt returns the value at tokens in v.
func valueAt(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[t]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// overlay makes the field at tokens of dst what it is in src: a copy of src's value, or absent
// when src has none. Maps missing on the way in dst are made; a list too short is left alone.
func overlay(dst, src map[string]any, tokens []string) {
	if len(tokens) == 0 {
		return
	}
	v, ok := valueAt(src, tokens)
	var parent any = dst
	for _, t := range tokens[:len(tokens)-1] {
		switch c := parent.(type) {
		case map[string]any:
			next, found := c[t]
			if !found {
				if !ok {
					return
				}
				next = map[string]any{}
				c[t] = next
			}
			parent = next
		case []any:
			idx, err := strconv.Atoi(t)
			if err != nil || idx < 0 || idx >= len(c) {
				return
			}
			parent = c[idx]
		default:
			return
		}
	}
	last := tokens[len(tokens)-1]
	switch c := parent.(type) {
	case map[string]any:
		if ok {
			c[last] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(c, last)
		}
	case []any:
		if idx, err := strconv.Atoi(last); err == nil && idx >= 0 && idx < len(c) && ok {
			c[idx] = runtime.DeepCopyJSONValue(v)
		}
	}
}

// covers reports whether have holds every field of want with want's value: maps may have more
// keys, lists must have as many items, each covered. A nil in want asks for nothing.
func covers(want, have any) bool {
	switch w := want.(type) {
	case nil:
		return true
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			hv, found := h[k]
			if v != nil && (!found || !covers(v, hv)) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(w[i], h[i]) {
				return false
			}
		}
		return true
	default:
		return scalarEqual(want, have)
	}
}

// diffPaths returns the JSON pointers (under path) of the fields where a and b differ: a key in
// one map only, a list whose length changed, a different value.
func diffPaths(a, b any, path []string, out []string) []string {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return append(out, pointerOf(path))
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			xv, inX := x[k]
			yv, inY := y[k]
			sub := append(slices.Clip(path), k)
			if !inX || !inY {
				out = append(out, pointerOf(sub))
				continue
			}
			out = diffPaths(xv, yv, sub, out)
		}
		return out
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return append(out, pointerOf(path))
		}
		for i := range x {
			out = diffPaths(x[i], y[i], append(slices.Clip(path), strconv.Itoa(i)), out)
		}
		return out
	default:
		if !scalarEqual(a, b) {
			return append(out, pointerOf(path))
		}
		return out
	}
}

// scalarEqual compares two JSON scalars, numbers by value whatever their Go type.
func scalarEqual(a, b any) bool {
	if x, ok := resource.Number(a); ok {
		y, ok := resource.Number(b)
		return ok && x == y
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return a == b
}
