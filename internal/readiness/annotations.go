package readiness

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/jsonpath"

	"github.com/berthdev/berth/internal/resource"
)

// The annotations of HIP-0025's custom readiness: each holds a JSON array of expressions
// `{<jsonpath>} <op> <value>`, read under the object's status as Helm reads them.
const (
	AnnotationSuccess = "helm.sh/readiness-success"
	AnnotationFailure = "helm.sh/readiness-failure"
)

// ExpressionError says a readiness annotation, or one of its expressions, cannot be read.
type ExpressionError struct {
	Annotation string
	// Expression is the expression as written; empty when the annotation is not a JSON array
	// of strings.
	Expression string
	Err        error
}

func (e *ExpressionError) Error() string {
	if e.Expression == "" {
		return fmt.Sprintf("annotation %s: %v", e.Annotation, e.Err)
	}
	return fmt.Sprintf("annotation %s: expression %s: %v", e.Annotation, e.Expression, e.Err)
}

func (e *ExpressionError) Unwrap() error { return e.Err }

// The budget of a readiness annotation, a chart's: its expressions are evaluated on every change
// of the object, and a JSONPath cannot be stopped once it runs, so an expression is bounded
// before, to work in proportion to the object's size.
const (
	// MaxAnnotationExpressions is the most expressions an annotation may hold.
	MaxAnnotationExpressions = 16
	// MaxPathUnion is the most values a path's unions ([a,b]) may pick each value found
	// before them, multiplied together: each of them can pick a value again.
	MaxPathUnion = 8
)

// The ways a JSONPath can be over its budget. A recursive descent (..) visits every value
// below each value found: two visit values again for each value above them; a filter within a
// filter evaluates a path for each value for each value.
var (
	ErrRecursiveDescents = errors.New("more than one recursive descent (..): each visits every value below each value found before it")
	ErrNestedFilter      = errors.New("a filter within a filter")
	ErrWideUnion         = fmt.Errorf("its unions pick more than %d values of each value found", MaxPathUnion)
)

// CheckAnnotations returns an *ExpressionError for each readiness annotation of obj that
// cannot be read: one that is not a JSON array of strings, or holds an expression that is not
// `{<jsonpath>} <op> <value>`. It evaluates nothing.
func CheckAnnotations(obj *unstructured.Unstructured) error {
	var errs []error
	for _, key := range []string{AnnotationSuccess, AnnotationFailure} {
		if _, err := expressionsOf(obj, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// annotated is obj's readiness by its annotations, and whether they decide it: any true failure
// expression makes it Failed, else any true success expression Ready, else it is in progress.
// With no success expression, they decide only a failure. An annotation that cannot be read
// makes it Failed: it would never say anything else.
func annotated(obj *unstructured.Unstructured) (Result, bool) {
	failure, err := expressionsOf(obj, AnnotationFailure)
	if err != nil {
		return unreadable(err), true
	}
	success, err := expressionsOf(obj, AnnotationSuccess)
	if err != nil {
		return unreadable(err), true
	}
	for _, e := range failure {
		if e.holds(obj.Object) {
			return Result{State: Failed, Message: fmt.Sprintf("%s: %s is true", AnnotationFailure, e.text), Expression: e.text}, true
		}
	}
	if len(success) == 0 {
		return Result{}, false
	}
	texts := make([]string, len(success))
	for i, e := range success {
		if e.holds(obj.Object) {
			return Result{State: Ready, Message: fmt.Sprintf("%s: %s is true", AnnotationSuccess, e.text), Expression: e.text}, true
		}
		texts[i] = e.text
	}
	return Result{State: InProgress, Message: "waiting for " + AnnotationSuccess + ": " + strings.Join(texts, " or ")}, true
}

func unreadable(err error) Result {
	r := Result{State: Failed, Message: err.Error()}
	var ee *ExpressionError
	if errors.As(err, &ee) {
		r.Expression = ee.Expression
	}
	return r
}

// expression is one `{<jsonpath>} <op> <value>` of a readiness annotation.
type expression struct {
	text string
	path *jsonpath.JSONPath
	op   string
	// want is a string, a float64, a bool or nil.
	want any
}

// expressionsOf returns the expressions of obj's annotation key, none when it has none.
func expressionsOf(obj *unstructured.Unstructured, key string) ([]expression, error) {
	raw, ok := annotation(obj, key)
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var texts []string
	if len(raw) > (MaxExpressionLength+8)*MaxAnnotationExpressions {
		return nil, &ExpressionError{Annotation: key, Err: &TooLongError{Length: len(raw), Max: (MaxExpressionLength + 8) * MaxAnnotationExpressions}}
	}
	if err := json.Unmarshal([]byte(raw), &texts); err != nil {
		return nil, &ExpressionError{Annotation: key, Err: fmt.Errorf("want a JSON array of expressions: %w", err)}
	}
	if len(texts) > MaxAnnotationExpressions {
		return nil, &ExpressionError{Annotation: key, Err: &TooManyError{What: "expressions", Count: len(texts), Max: MaxAnnotationExpressions}}
	}
	out := make([]expression, 0, len(texts))
	for _, text := range texts {
		e, err := parseExpression(text)
		if err != nil {
			return nil, &ExpressionError{Annotation: key, Expression: text, Err: err}
		}
		out = append(out, e)
	}
	return out, nil
}

func annotation(obj *unstructured.Unstructured, key string) (string, bool) {
	m, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "annotations")
	a, _ := m.(map[string]any)
	s, ok := a[key].(string)
	return s, ok
}

// operators, the two-character ones first.
var operators = []string{"==", "!=", "<=", ">=", "<", ">"}

// parseExpression reads `{<jsonpath>} <op> <value>`, and refuses a path over its budget.
func parseExpression(text string) (expression, error) {
	if len(text) > MaxExpressionLength {
		return expression{}, &TooLongError{Length: len(text), Max: MaxExpressionLength}
	}
	s := strings.TrimSpace(text)
	if !strings.HasPrefix(s, "{") {
		return expression{}, errors.New("want {<jsonpath>} <op> <value>")
	}
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return expression{}, errors.New("no } after the JSONPath")
	}
	template, err := statusPath(strings.TrimSpace(s[1:end]))
	if err != nil {
		return expression{}, err
	}
	parsed, err := jsonpath.Parse("readiness", template)
	if err != nil {
		return expression{}, fmt.Errorf("JSONPath %s: %w", s[:end+1], err)
	}
	var b pathBudget
	if err := b.walk(parsed.Root, 0); err != nil {
		return expression{}, fmt.Errorf("JSONPath %s: %w", s[:end+1], err)
	}
	// A key that is missing finds nothing, even within a filter over items that lack it.
	path := jsonpath.New("readiness").AllowMissingKeys(true)
	if err := path.Parse(template); err != nil {
		return expression{}, fmt.Errorf("JSONPath %s: %w", s[:end+1], err)
	}
	rest := strings.TrimSpace(s[end+1:])
	var op string
	for _, o := range operators {
		if strings.HasPrefix(rest, o) {
			op = o
			break
		}
	}
	if op == "" {
		return expression{}, errors.New("want ==, !=, <, <=, > or >= after the JSONPath")
	}
	want, err := literal(strings.TrimSpace(rest[len(op):]))
	if err != nil {
		return expression{}, err
	}
	if _, isNumber := want.(float64); !isNumber && op != "==" && op != "!=" {
		return expression{}, fmt.Errorf("%s compares numbers: %s is not one", op, strings.TrimSpace(rest[len(op):]))
	}
	return expression{text: text, path: path, op: op, want: want}, nil
}

// pathBudget counts what makes a JSONPath work more than once for a value of the object.
type pathBudget struct {
	recursive int
	union     int
}

func (b *pathBudget) walk(n jsonpath.Node, filters int) error {
	switch n := n.(type) {
	case *jsonpath.ListNode:
		for _, c := range n.Nodes {
			if err := b.walk(c, filters); err != nil {
				return err
			}
		}
	case *jsonpath.RecursiveNode:
		if b.recursive++; b.recursive > 1 {
			return ErrRecursiveDescents
		}
	case *jsonpath.UnionNode:
		if b.union == 0 {
			b.union = 1
		}
		if b.union *= len(n.Nodes); b.union > MaxPathUnion {
			return ErrWideUnion
		}
		for _, c := range n.Nodes {
			if err := b.walk(c, filters); err != nil {
				return err
			}
		}
	case *jsonpath.FilterNode:
		if filters > 0 {
			return ErrNestedFilter
		}
		for _, c := range []*jsonpath.ListNode{n.Left, n.Right} {
			if c == nil {
				continue
			}
			if err := b.walk(c, filters+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// statusPath is the JSONPath template of a path read under the object's status, as Helm reads
// it: {.phase} and {.status.phase} are the same field.
func statusPath(path string) (string, error) {
	switch {
	case path == ".status" || strings.HasPrefix(path, ".status.") || strings.HasPrefix(path, ".status["):
		return "{" + path + "}", nil
	case strings.HasPrefix(path, ".") || strings.HasPrefix(path, "["):
		return "{.status" + path + "}", nil
	}
	return "", fmt.Errorf("JSONPath {%s} must start with . or [", path)
}

// literal reads the value an expression compares with: a JSON string, number, true, false or
// null; as Helm reads them, a value in single quotes or a bare word is a string too.
func literal(raw string) (any, error) {
	if raw == "" {
		return nil, errors.New("no value after the operator")
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err == nil {
		switch v.(type) {
		case string, float64, bool, nil:
			return v, nil
		}
		return nil, fmt.Errorf("value %s is not a string, number, true, false or null", raw)
	}
	if len(raw) >= 2 && raw[0] == '\'' && raw[len(raw)-1] == '\'' {
		return raw[1 : len(raw)-1], nil
	}
	if bareWord(raw) {
		return raw, nil
	}
	return nil, fmt.Errorf("value %s is not a JSON literal", raw)
}

func bareWord(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/+", r)) {
			return false
		}
	}
	return true
}

// holds says whether the expression is true of obj: a path that finds nothing is false; a path
// that finds several values is true when one of them compares true.
func (e expression) holds(obj map[string]any) bool {
	results, err := e.path.FindResults(obj)
	if err != nil {
		return false
	}
	for _, vals := range results {
		for _, v := range vals {
			if compare(valueOf(v), e.op, e.want) {
				return true
			}
		}
	}
	return false
}

func valueOf(v reflect.Value) any {
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// compare compares a value found with the expression's: numbers as numbers, strings, booleans
// and null as such; a number or boolean found is compared with a string as the text it reads
// as, and a numeric or boolean string found with a number or boolean as what it says (as Helm
// compares them). Values of other types are not equal.
func compare(got any, op string, want any) bool {
	switch w := want.(type) {
	case float64:
		g, ok := number(got)
		if !ok {
			return op == "!="
		}
		return ordered(cmp.Compare(g, w), op)
	case bool:
		g, ok := got.(bool)
		if s, isString := got.(string); isString {
			b, err := strconv.ParseBool(s)
			g, ok = b, err == nil
		}
		if !ok {
			return op == "!="
		}
		return (g == w) == (op == "==")
	case string:
		g, ok := text(got)
		if !ok {
			return op == "!="
		}
		return (g == w) == (op == "==")
	}
	return (got == nil) == (op == "==")
}

func ordered(c int, op string) bool {
	switch op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

// number reads a value found as a number: a number of any Go type, or a string that reads as one.
func number(v any) (float64, bool) {
	if s, ok := v.(string); ok {
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	return resource.Number(v)
}

func text(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool:
		return strconv.FormatBool(t), true
	case int64:
		return strconv.FormatInt(t, 10), true
	case int:
		return strconv.Itoa(t), true
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64), true
	}
	return "", false
}
