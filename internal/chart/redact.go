package chart

import (
	"fmt"
	"strconv"
	"strings"
)

// RedactedError is an error whose message can quote the values a chart was given (a Secret's
// content, say), with a form that quotes none: what may be written where people who are not
// meant to read the values read it (a Release's status and Events, a controller's logs). The
// message itself stays whole for the user who gave the values.
type RedactedError interface {
	error
	// Redacted is the message without any value.
	Redacted() string
}

// TemplateError is a template of a chart that failed to render: a call of fail or required, a
// parse error or an execution error. Its message is Helm's, with the template's own message, which
// can print values; Redacted keeps only where the template failed.
type TemplateError struct {
	// Template is the template's path ("app/templates/secret.yaml"), Line and Column where it
	// failed; empty and 0 when Helm's message does not say.
	Template     string
	Line, Column int
	Err          error
}

func (e *TemplateError) Error() string { return e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// Location is TEMPLATE:LINE[:COLUMN], or empty.
func (e *TemplateError) Location() string {
	switch {
	case e.Template == "":
		return ""
	case e.Line == 0:
		return e.Template
	case e.Column == 0:
		return fmt.Sprintf("%s:%d", e.Template, e.Line)
	}
	return fmt.Sprintf("%s:%d:%d", e.Template, e.Line, e.Column)
}

func (e *TemplateError) Redacted() string {
	const left = "its message is left out, as it can print values"
	if loc := e.Location(); loc != "" {
		return fmt.Sprintf("template %s failed (%s)", loc, left)
	}
	return fmt.Sprintf("a template failed (%s)", left)
}

// templateError wraps an error of Helm's template engine, finding where it failed in its
// message: "execution error at (LOCATION): ...", "parse error at (LOCATION): ...", "... in
// (TEMPLATE): ..." or, for other execution errors, the location alone on the first line.
func templateError(err error) *TemplateError {
	e := &TemplateError{Err: err}
	msg := firstLine(err.Error())
	loc := ""
	for _, prefix := range []string{"execution error at (", "parse error at (", "execution error in (", "parse error in ("} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			loc, _, _ = strings.Cut(rest, "): ")
			break
		}
	}
	if loc == "" && !strings.ContainsAny(msg, " ()") {
		loc = msg // TEMPLATE:LINE:COLUMN, then the trace on the next lines
	}
	e.Template, e.Line, e.Column = splitLocation(loc)
	return e
}

// splitLocation splits TEMPLATE[:LINE[:COLUMN]].
func splitLocation(loc string) (string, int, int) {
	var nums []int
	for len(nums) < 2 {
		i := strings.LastIndexByte(loc, ':')
		if i < 0 {
			break
		}
		n, err := strconv.Atoi(loc[i+1:])
		if err != nil {
			break
		}
		nums = append([]int{n}, nums...)
		loc = loc[:i]
	}
	switch len(nums) {
	case 2:
		return loc, nums[0], nums[1]
	case 1:
		return loc, nums[0], 0
	}
	return loc, 0, 0
}

// CoalesceError is values that cannot be combined with a chart's defaults and its subcharts':
// Helm's message quotes the value that does not fit ("type mismatch on SUBCHART: VALUE").
type CoalesceError struct {
	Err error
}

func (e *CoalesceError) Error() string { return e.Err.Error() }
func (e *CoalesceError) Unwrap() error { return e.Err }

func (e *CoalesceError) Redacted() string {
	if rest, ok := strings.CutPrefix(e.Err.Error(), "type mismatch on "); ok {
		if sub, _, ok := strings.Cut(rest, ": "); ok {
			return fmt.Sprintf("the value of %s is not a map, as the values of subchart %s must be (the value is left out)", sub, sub)
		}
	}
	return "the values do not fit the chart's (Helm's message is left out, as it can quote values)"
}
