package diff

import (
	"cmp"
	"slices"
	"strings"

	"github.com/berthdev/berth/internal/valuemask"
)

// The marks that stand for a value from an encrypted values file in an object's diff: where the
// mark would hide that a field changes, the two sides say so.
const (
	maskedBefore  = "(masked, before)"
	maskedChanged = "(masked, changed)"
)

// maskStrings replaces, in two versions of an object (either may be nil), every occurrence of
// each of secrets within a string value by valuemask.Mask, and a number value that prints as one
// by the mark; where the masked field would read the same on both sides though it changes, the
// marks say before and changed.
func maskStrings(before, after map[string]any, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	// The longest first, so that a secret within another is found after it.
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	m := masker{secrets: slices.Compact(secrets)}
	if before == nil || after == nil {
		m.side(before)
		m.side(after)
		return
	}
	m.pair(before, after)
}

type masker struct{ secrets []string }

// text is s with each secret replaced by mark, and whether any was.
func (m masker) text(s, mark string) (string, bool) {
	found := false
	for _, sec := range m.secrets {
		if strings.Contains(s, sec) {
			s, found = strings.ReplaceAll(s, sec, mark), true
		}
	}
	return s, found
}

// leaf is the masked value of v (a string, or a number that prints as a secret) and whether it
// was masked.
func (m masker) leaf(v any, mark string) (any, bool) {
	if s, ok := v.(string); ok {
		return m.text(s, mark)
	}
	if s, ok := valuemask.Text(v); ok {
		for _, sec := range m.secrets {
			if s == sec {
				return mark, true
			}
		}
	}
	return v, false
}

// side masks the values of one version of an object in place.
func (m masker) side(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = m.side(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = m.side(x)
		}
		return v
	}
	out, _ := m.leaf(v, valuemask.Mask)
	return out
}

// pair masks two versions of an object in place, field by field, and returns them.
func (m masker) pair(a, b any) (any, any) {
	switch a := a.(type) {
	case map[string]any:
		if b, ok := b.(map[string]any); ok {
			for k := range a {
				if x, ok := b[k]; ok {
					a[k], b[k] = m.pair(a[k], x)
				} else {
					a[k] = m.side(a[k])
				}
			}
			for k, x := range b {
				if _, ok := a[k]; !ok {
					b[k] = m.side(x)
				}
			}
			return a, b
		}
	case []any:
		if b, ok := b.([]any); ok {
			for i := range a {
				if i < len(b) {
					a[i], b[i] = m.pair(a[i], b[i])
				} else {
					a[i] = m.side(a[i])
				}
			}
			for i := len(a); i < len(b); i++ {
				b[i] = m.side(b[i])
			}
			return a, b
		}
	default:
		if isTree(b) {
			break
		}
		ma, maskedA := m.leaf(a, valuemask.Mask)
		mb, maskedB := m.leaf(b, valuemask.Mask)
		if (maskedA || maskedB) && ma == mb && !sameLeaf(a, b) {
			ma, _ = m.leaf(a, maskedBefore)
			mb, _ = m.leaf(b, maskedChanged)
		}
		return ma, mb
	}
	return m.side(a), m.side(b)
}

// sameLeaf says whether two leaf values are equal.
func sameLeaf(a, b any) bool {
	sa, okA := valuemask.Text(a)
	sb, okB := valuemask.Text(b)
	if okA && okB {
		return sa == sb
	}
	return a == b
}

// isTree says whether v is a map or a list.
func isTree(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}
