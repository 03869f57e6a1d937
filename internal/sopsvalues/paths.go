package sopsvalues

import (
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/yamlbound"
)

// encryptedPrefix begins every value SOPS encrypted: ENC[AES256_GCM,data:...,iv:...,tag:...,type:...].
const encryptedPrefix = "ENC[AES256_GCM,"

// Path is where a value sits in a values document: its keys, from the top.
type Path []string

// String writes p as --set names a value: keys joined by dots, a dot within a key as \.
func (p Path) String() string {
	keys := make([]string, len(p))
	for i, k := range p {
		keys[i] = strings.ReplaceAll(k, ".", `\.`)
	}
	return strings.Join(keys, ".")
}

// EncryptedPaths are the paths of the values that the SOPS document data (of Detect) holds
// encrypted, in order, the sops metadata left out: each key whose value is encrypted, and each
// key of a list with an encrypted item (a list counts as one value). Values SOPS left in clear
// (unencrypted_suffix, encrypted_regex and their kin) are not among them. A document that
// cannot be read has none.
func EncryptedPaths(data []byte) []Path {
	if yamlbound.Check(data, yamlbound.Local) != nil {
		return nil
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	delete(doc, "sops")
	var out []Path
	var walk func(at Path, v any) bool
	walk = func(at Path, v any) bool {
		switch v := v.(type) {
		case string:
			return strings.HasPrefix(v, encryptedPrefix)
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if walk(append(slices.Clip(at), k), v[k]) {
					out = append(out, append(slices.Clip(at), k))
				}
			}
		case []any:
			return holdsEncrypted(v)
		}
		return false
	}
	walk(nil, doc)
	return out
}

// holdsEncrypted reports whether v, or anything within it, is an encrypted value.
func holdsEncrypted(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.HasPrefix(v, encryptedPrefix)
	case map[string]any:
		for _, item := range v {
			if holdsEncrypted(item) {
				return true
			}
		}
	case []any:
		for _, item := range v {
			if holdsEncrypted(item) {
				return true
			}
		}
	}
	return false
}
