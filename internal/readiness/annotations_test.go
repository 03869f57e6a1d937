package readiness

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// widget is a custom resource with annotations (key, JSON array of expressions) and status
// (YAML flow), or none.
func widget(t *testing.T, status string, annotations ...string) *unstructured.Unstructured {
	t.Helper()
	var y strings.Builder
	y.WriteString("{apiVersion: example.com/v1, kind: Widget, metadata: {name: w, generation: 1")
	if len(annotations) > 0 {
		y.WriteString(", annotations: {")
		for i := 0; i+1 < len(annotations); i += 2 {
			if i > 0 {
				y.WriteString(", ")
			}
			v, err := json.Marshal(annotations[i+1])
			if err != nil {
				t.Fatal(err)
			}
			y.WriteString(annotations[i] + ": " + string(v))
		}
		y.WriteString("}")
	}
	y.WriteString("}")
	if status != "" {
		y.WriteString(", status: " + status)
	}
	y.WriteString("}")
	return obj(t, y.String())
}

func TestAnnotations(t *testing.T) {
	ready := `["{.status.phase} == \"Ready\""]`
	tests := []struct {
		name    string
		status  string
		success string
		failure string
		want    State
		// expr, when set, is the expression the result must name.
		expr string
	}{
		{name: "no status yet", success: ready, want: InProgress},
		{name: "success true", status: `{phase: Ready}`, success: ready, want: Ready, expr: `{.status.phase} == "Ready"`},
		{name: "success false", status: `{phase: Pending}`, success: ready, want: InProgress},
		{name: "path under status as Helm reads it", status: `{phase: Ready}`, success: `["{.phase} == \"Ready\""]`, want: Ready},
		{name: "failure wins over success", status: `{phase: Ready, errors: 1}`, success: ready,
			failure: `["{.status.errors} > 0"]`, want: Failed, expr: `{.status.errors} > 0`},
		{name: "failure false, success true", status: `{phase: Ready, errors: 0}`, success: ready, failure: `["{.status.errors} > 0"]`, want: Ready},
		{name: "any success expression", status: `{replicas: 3}`, success: `["{.status.phase} == \"Ready\"", "{.status.replicas} >= 2"]`,
			want: Ready, expr: `{.status.replicas} >= 2`},
		{name: "numbers", status: `{replicas: 2}`, success: `["{.status.replicas} < 2"]`, want: InProgress},
		{name: "number equal", status: `{replicas: 2}`, success: `["{.status.replicas} == 2"]`, want: Ready},
		{name: "float", status: `{ratio: 0.5}`, success: `["{.status.ratio} <= 0.5"]`, want: Ready},
		{name: "bool", status: `{ok: true}`, success: `["{.status.ok} == true"]`, want: Ready},
		{name: "bool false", status: `{ok: false}`, success: `["{.status.ok} == true"]`, want: InProgress},
		{name: "null", status: `{err: null}`, success: `["{.status.err} == null"]`, want: Ready},
		{name: "missing path is false, even with !=", status: `{}`, success: `["{.status.phase} != \"Failed\""]`, want: InProgress},
		{name: "not equal", status: `{phase: Running}`, success: `["{.status.phase} != \"Failed\""]`, want: Ready},
		{name: "single quotes", status: `{phase: Ready}`, success: `["{.status.phase} == 'Ready'"]`, want: Ready},
		{name: "bare word", status: `{phase: Ready}`, success: `["{.status.phase} == Ready"]`, want: Ready},
		{name: "number compared with a string", status: `{count: 1}`, success: `["{.status.count} == \"1\""]`, want: Ready},
		{name: "filter", status: `{conditions: [{type: Synced, status: "False"}, {type: Ready, status: "True"}]}`,
			success: `["{.status.conditions[?(@.type==\"Ready\")].status} == \"True\""]`, want: Ready},
		{name: "filter over items without the key", status: `{conditions: [{reason: x}, {type: Ready, status: "True"}]}`,
			success: `["{.status.conditions[?(@.type==\"Ready\")].status} == \"True\""]`, want: Ready},
		{name: "any of several values", status: `{conditions: [{status: "False"}, {status: "True"}]}`,
			success: `["{.status.conditions[*].status} == \"True\""]`, want: Ready},
		{name: "failure alone leaves readiness to the other rules", status: `{phase: Pending}`, failure: `["{.status.phase} == \"Failed\""]`, want: Ready},
		{name: "failure alone, true", status: `{phase: Failed}`, failure: `["{.status.phase} == \"Failed\""]`, want: Failed},
		{name: "empty array", status: `{}`, success: `[]`, want: Ready},
		{name: "malformed annotation fails", success: `{.status.phase} == "Ready"`, want: Failed},
		{name: "malformed expression fails", success: `["{.status.phase} = \"Ready\""]`, want: Failed, expr: `{.status.phase} = "Ready"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var annotations []string
			if tt.success != "" {
				annotations = append(annotations, AnnotationSuccess, tt.success)
			}
			if tt.failure != "" {
				annotations = append(annotations, AnnotationFailure, tt.failure)
			}
			got := Compute(widget(t, tt.status, annotations...), Options{})
			if got.State != tt.want || (tt.expr != "" && got.Expression != tt.expr) {
				t.Errorf("Compute = %s %q (%s), want %s %q", got.State, got.Expression, got.Message, tt.want, tt.expr)
			}
			if got.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestAnnotationMessagesNameTheExpression(t *testing.T) {
	failed := Compute(widget(t, `{phase: Broken}`, AnnotationFailure, `["{.status.phase} == \"Broken\""]`), Options{})
	if want := `helm.sh/readiness-failure: {.status.phase} == "Broken" is true`; failed.Message != want {
		t.Errorf("failed: %q, want %q", failed.Message, want)
	}
	waiting := Compute(widget(t, "", AnnotationSuccess, `["{.status.phase} == \"Ready\"", "{.status.n} > 1"]`), Options{})
	if want := `waiting for helm.sh/readiness-success: {.status.phase} == "Ready" or {.status.n} > 1`; waiting.Message != want {
		t.Errorf("waiting: %q, want %q", waiting.Message, want)
	}
}

func TestCheckAnnotations(t *testing.T) {
	tests := []struct {
		name  string
		value string
		// expr is the expression the error names; "" for the annotation alone; "-" for no error.
		expr string
		msg  string
	}{
		{name: "valid", value: `["{.status.phase} == \"Ready\"", "{.replicas} >= 2", "{.ok} != false", "{.e} == null"]`, expr: "-"},
		{name: "empty", value: ``, expr: "-"},
		{name: "not JSON", value: `{.status.phase} == "Ready"`, msg: "JSON array"},
		{name: "not strings", value: `[1]`, msg: "JSON array"},
		{name: "no braces", value: `[".status.phase == 1"]`, expr: ".status.phase == 1", msg: "{<jsonpath>}"},
		{name: "no closing brace", value: `["{.status.phase == 1"]`, expr: "{.status.phase == 1", msg: "no }"},
		{name: "path", value: `["{status} == 1"]`, expr: "{status} == 1", msg: "must start with"},
		{name: "bad JSONPath", value: `["{.status[} == 1"]`, expr: "{.status[} == 1", msg: "JSONPath"},
		{name: "operator", value: `["{.status.phase} = 1"]`, expr: "{.status.phase} = 1", msg: "want =="},
		{name: "no value", value: `["{.status.phase} =="]`, expr: "{.status.phase} ==", msg: "no value"},
		{name: "not a literal", value: `["{.status.phase} == \"Ready"]`, expr: `{.status.phase} == "Ready`, msg: "not a JSON literal"},
		{name: "array value", value: `["{.status.phase} == [1]"]`, expr: "{.status.phase} == [1]", msg: "not a string, number"},
		{name: "ordering a string", value: `["{.status.phase} > \"A\""]`, expr: `{.status.phase} > "A"`, msg: "compares numbers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAnnotations(widget(t, "", AnnotationSuccess, tt.value))
			if tt.expr == "-" {
				if err != nil {
					t.Fatalf("CheckAnnotations: %v", err)
				}
				return
			}
			var ee *ExpressionError
			if !errors.As(err, &ee) {
				t.Fatalf("CheckAnnotations = %v, want an *ExpressionError", err)
			}
			if ee.Annotation != AnnotationSuccess || ee.Expression != tt.expr || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("CheckAnnotations = %q (annotation %q, expression %q), want annotation %q, expression %q, saying %q",
					err, ee.Annotation, ee.Expression, AnnotationSuccess, tt.expr, tt.msg)
			}
		})
	}
}

func TestCheckAnnotationsNamesTheFailureAnnotation(t *testing.T) {
	err := CheckAnnotations(widget(t, "", AnnotationSuccess, `["{.a} == 1"]`, AnnotationFailure, `["{.a} === 1"]`))
	var ee *ExpressionError
	if !errors.As(err, &ee) || ee.Annotation != AnnotationFailure || ee.Expression != "{.a} === 1" {
		t.Fatalf("CheckAnnotations = %v, want the failure annotation's expression", err)
	}
}
