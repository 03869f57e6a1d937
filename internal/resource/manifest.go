package resource

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/yamlbound"
)

// documentSeparator splits a YAML stream the way Helm splits a release manifest.
var documentSeparator = regexp.MustCompile(`(?m)^---[ \t]*`)

const sourcePrefix = "# Source: "

// Document is one non-empty YAML document of a manifest stream with the template it came from.
type Document struct {
	// Source is the chart-relative template path from the document's "# Source:" comment, or "".
	Source string
	// Index is the document's position (from 1) among the stream's non-empty documents.
	Index int
	// Content is the document's text.
	Content string
}

// String names the document for error messages: its template, or its position in the stream.
func (d Document) String() string {
	if d.Source != "" {
		return d.Source
	}
	return fmt.Sprintf("document %d", d.Index)
}

// SplitManifest splits a multi-document YAML stream (Helm's `---` separators) into its documents,
// skipping those that hold nothing but whitespace and comments.
func SplitManifest(manifest string) []Document {
	var docs []Document
	for _, text := range documentSeparator.Split(manifest, -1) {
		if isBlankDocument(text) {
			continue
		}
		docs = append(docs, Document{Source: sourceOf(text), Index: len(docs) + 1, Content: text})
	}
	return docs
}

// ParseManifest parses a multi-document YAML stream, such as a release manifest or the output of
// `helm template`, into objects in stream order. Empty documents are skipped; every other document
// must be a mapping with apiVersion, kind and metadata.name. An error names the document's template.
func ParseManifest(manifest string) ([]*unstructured.Unstructured, error) {
	var once *Parsed // nil: remembers nothing
	return once.Manifest(manifest)
}

// ParseDocument parses one document into an object. It returns nil, nil for a document that holds
// only a YAML null (comments, `~`).
func ParseDocument(doc Document) (*unstructured.Unstructured, error) {
	// A recorded manifest is parsed too, and a record is whatever its Secret holds.
	if err := yamlbound.CheckString(doc.Content, yamlbound.Tenant); err != nil {
		return nil, fmt.Errorf("%s: %w", doc, err)
	}
	var content map[string]any
	if err := yaml.Unmarshal([]byte(doc.Content), &content); err != nil {
		return nil, SyntaxErrorOf(doc.Source, doc.Index, err)
	}
	if len(content) == 0 {
		return nil, nil
	}
	obj := &unstructured.Unstructured{Object: content}
	if err := requireString(doc, content, "apiVersion"); err != nil {
		return nil, err
	}
	if err := requireString(doc, content, "kind"); err != nil {
		return nil, err
	}
	name, found, err := unstructured.NestedString(content, "metadata", "name")
	if err != nil {
		// The accessor's error quotes the value.
		return nil, &SyntaxError{Source: doc.Source, Index: doc.Index, Field: "metadata.name"}
	}
	if !found || name == "" {
		return nil, fmt.Errorf("%s: %s has no metadata.name", doc, obj.GetKind())
	}
	return obj, nil
}

func requireString(doc Document, content map[string]any, field string) error {
	v, ok := content[field]
	if !ok {
		return fmt.Errorf("%s: object has no %s", doc, field)
	}
	s, ok := v.(string)
	if !ok {
		return &SyntaxError{Source: doc.Source, Index: doc.Index, Field: field}
	}
	if s == "" {
		return fmt.Errorf("%s: %s is empty", doc, field)
	}
	return nil
}

// sourceOf returns the template path of the "# Source:" comment among the document's leading
// comment lines.
func sourceOf(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, sourcePrefix); ok {
			return strings.TrimSpace(rest)
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			return ""
		}
	}
	return ""
}

func isBlankDocument(text string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}
