package resource

import (
	"errors"
	"strings"
	"testing"
)

// A value that is also YAML syntax, rendered unquoted, breaks its document: the error names the
// template and the line, never the text.
func TestParseDocumentQuotesNoText(t *testing.T) {
	const secret = "Hunter2-s3cr3t"
	head := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\nstringData:\n"
	for _, tc := range []struct {
		name, content, field string
		line                 int
	}{
		{"alias", head + "  p: *" + secret + "\n", "", 0},
		{"mapping", head + "  p: a: " + secret + "\n", "", 6},
		{"flow", head + "  p: [" + secret + "\n", "", 6},
		{"name", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {" + secret + ": 1}\n", "metadata.name", 0},
		{"apiVersion", "apiVersion: {" + secret + ": 1}\nkind: Secret\nmetadata:\n  name: x\n", "apiVersion", 0},
		{"kind", "apiVersion: v1\nkind: [" + secret + "]\nmetadata:\n  name: x\n", "kind", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDocument(Document{Source: "c/templates/s.yaml", Index: 2, Content: tc.content})
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a *SyntaxError", err)
			}
			if strings.Contains(err.Error(), "Hunter2") || strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error quotes the value: %v", err)
			}
			if se.Source != "c/templates/s.yaml" || se.Field != tc.field || se.Line != tc.line {
				t.Fatalf("got %+v, want source c/templates/s.yaml, field %q, line %d", se, tc.field, tc.line)
			}
		})
	}
}
