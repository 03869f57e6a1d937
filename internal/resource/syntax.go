package resource

import (
	"fmt"
	"regexp"
	"strconv"
)

// A rendered document holds the release's values, some of them from Secrets, and a value that
// is also YAML syntax (`*Hunter2`, an alias; `a: b`, a mapping) breaks its document. The YAML
// and JSON libraries' errors quote the text they failed on, so an error of a rendered or
// recorded document never carries theirs: only the document's template, its place in the
// stream and the line, which SyntaxError gives.

// SyntaxError says a document of a manifest is not a Kubernetes object: not valid YAML, or a
// field that must be a string is not one. It names the document's template (Source), its place
// and the line; it never quotes the document's text.
type SyntaxError struct {
	// Source is the template the document came from ("" when unknown); Index is its place in
	// the stream (from 1; 0 when unknown).
	Source string
	Index  int
	// Line is the line of the document where the parser stopped; 0 when it did not say.
	Line int
	// Field, when set, is the field that is not a string; otherwise the YAML is not valid.
	Field string
}

func (e *SyntaxError) Error() string {
	where := e.Source
	if where == "" {
		where = fmt.Sprintf("document %d", e.Index)
	}
	what := "is not valid YAML"
	if e.Field != "" {
		what = fmt.Sprintf("has a %s that is not a string", e.Field)
	}
	if e.Line > 0 {
		what += fmt.Sprintf(" (line %d)", e.Line)
	}
	return fmt.Sprintf("%s: the rendered document %s; its text is not quoted, as it may hold values: render it with berth template to see it", where, what)
}

// lineOf is the line number a YAML parser's error gives; 0 when it gives none.
var lineOf = regexp.MustCompile(`line (\d+)`)

// SyntaxErrorOf is the SyntaxError of the document of source whose parse failed with err: err's
// line number is kept, nothing else of its words.
func SyntaxErrorOf(source string, index int, err error) *SyntaxError {
	e := &SyntaxError{Source: source, Index: index}
	if m := lineOf.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
	}
	return e
}
