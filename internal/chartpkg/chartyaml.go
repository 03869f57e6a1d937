package chartpkg

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

// setChartFields returns the Chart.yaml raw with its top-level version and appVersion set to
// version and appVersion (an empty one is left as it is). Only the value of each is replaced,
// in place and in its own quoting style; a field Chart.yaml lacks is appended. Every other byte,
// comments and fields Helm does not know included, stays as written.
func setChartFields(raw []byte, version, appVersion string) ([]byte, error) {
	out := raw
	for _, f := range []struct{ key, value string }{{"version", version}, {"appVersion", appVersion}} {
		if f.value == "" {
			continue
		}
		var err error
		if out, err = setField(out, f.key, f.value); err != nil {
			return nil, fmt.Errorf("set %s in Chart.yaml: %w", f.key, err)
		}
	}
	var meta chartv2.Metadata
	if err := sigsyaml.Unmarshal(out, &meta); err != nil {
		return nil, fmt.Errorf("Chart.yaml after setting its version: %w", err)
	}
	if (version != "" && meta.Version != version) || (appVersion != "" && meta.AppVersion != appVersion) {
		return nil, fmt.Errorf("Chart.yaml reads version %q and appVersion %q after setting them to %q and %q",
			meta.Version, meta.AppVersion, version, appVersion)
	}
	return out, nil
}

// setField sets the top-level key of the YAML document raw to value.
func setField(raw []byte, key, value string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	text, err := scalarText(value)
	if err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("Chart.yaml is not a mapping")
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != key {
			continue
		}
		v := m.Content[i+1]
		start, end, ok := tokenSpan(raw, v)
		if !ok {
			return nil, fmt.Errorf("the value of %s is not a single-line scalar", key)
		}
		if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			text = quoteAs(v.Style, value)
		}
		return append(append(append([]byte{}, raw[:start]...), text...), raw[end:]...), nil
	}
	out := append([]byte{}, raw...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(out, fmt.Sprintf("%s: %s\n", key, text)...), nil
}

// scalarText is value as YAML writes a string: plain where that reads back as the same
// string, else quoted.
func scalarText(value string) (string, error) {
	b, err := yaml.Marshal(value)
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b, []byte("\n"))), nil
}

// quoteAs is value quoted in style, single or double.
func quoteAs(style yaml.Style, value string) string {
	if style&yaml.SingleQuotedStyle != 0 {
		return "'" + strings.ReplaceAll(value, "'", "''") + "'"
	}
	// Go's escapes are a subset of those of YAML's double-quoted scalars.
	return fmt.Sprintf("%q", value)
}

// tokenSpan returns where the scalar node v is written in raw, from its first byte to just
// after its last, when it is a plain or quoted scalar on one line.
func tokenSpan(raw []byte, v *yaml.Node) (start, end int, ok bool) {
	if v.Kind != yaml.ScalarNode || v.Line < 1 || v.Column < 1 {
		return 0, 0, false
	}
	lineStart := 0
	for line := 1; line < v.Line; line++ {
		i := bytes.IndexByte(raw[lineStart:], '\n')
		if i < 0 {
			return 0, 0, false
		}
		lineStart += i + 1
	}
	lineEnd := len(raw)
	if i := bytes.IndexByte(raw[lineStart:], '\n'); i >= 0 {
		lineEnd = lineStart + i
	}
	start = lineStart + v.Column - 1
	if start >= lineEnd {
		return 0, 0, false
	}
	line := raw[start:lineEnd]
	switch {
	case v.Style == 0:
		if !bytes.HasPrefix(line, []byte(v.Value)) {
			return 0, 0, false
		}
		return start, start + len(v.Value), true
	case v.Style&yaml.DoubleQuotedStyle != 0:
		for i := 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return start, start + i + 1, true
			}
		}
	case v.Style&yaml.SingleQuotedStyle != 0:
		for i := 1; i < len(line); i++ {
			if line[i] != '\'' {
				continue
			}
			if i+1 < len(line) && line[i+1] == '\'' {
				i++
				continue
			}
			return start, start + i + 1, true
		}
	}
	return 0, 0, false
}
