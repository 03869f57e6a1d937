package readiness

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// annotatedWith is a Widget whose success annotation is raw.
func annotatedWith(raw string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "annotations": map[string]any{AnnotationSuccess: raw}},
		"status":   map[string]any{"phase": "Ready", "items": []any{map[string]any{"a": "b"}}},
	}}
}

func jsonArray(exprs ...string) string {
	b, _ := json.Marshal(exprs)
	return string(b)
}

func TestCheckAnnotationsBudget(t *testing.T) {
	tests := []struct {
		name, raw string
		want      any
	}{
		{"two recursive descents", jsonArray(`{..items..a} == "b"`), ErrRecursiveDescents},
		{"a filter within a filter", jsonArray(`{.items[?(@.a[?(@.b == "c")])].a} == "b"`), nil},
		{"wide unions", jsonArray(`{.items[0,0,0][0,0,0]} == "b"`), ErrWideUnion},
		{"too long", jsonArray(`{.phase} == "` + strings.Repeat("x", MaxExpressionLength) + `"`), &TooLongError{}},
		{"too many", jsonArray(strings.Split(strings.Repeat(`{.phase} == "Ready",`, MaxAnnotationExpressions+1), ",")[:MaxAnnotationExpressions+1]...), &TooManyError{}},
		{"too large", strings.Repeat(" ", (MaxExpressionLength+8)*MaxAnnotationExpressions+1) + "[]", &TooLongError{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAnnotations(annotatedWith(tt.raw))
			var ee *ExpressionError
			if !errors.As(err, &ee) || ee.Annotation != AnnotationSuccess {
				t.Fatalf("CheckAnnotations = %v, want an *ExpressionError of %s", err, AnnotationSuccess)
			}
			switch w := tt.want.(type) {
			case *TooLongError:
				if !errors.As(err, &w) {
					t.Errorf("CheckAnnotations = %v, want a *TooLongError", err)
				}
			case *TooManyError:
				if !errors.As(err, &w) {
					t.Errorf("CheckAnnotations = %v, want a *TooManyError", err)
				}
			case error:
				if !errors.Is(err, w) {
					t.Errorf("CheckAnnotations = %v, want %v", err, w)
				}
			}
			// Refused, it decides nothing but a failure, and evaluates nothing.
			if got := Compute(annotatedWith(tt.raw), Options{}); got.State != Failed {
				t.Errorf("Compute = %s (%s), want Failed", got.State, got.Message)
			}
		})
	}
}

func TestCheckAnnotationsWithinBudget(t *testing.T) {
	for _, e := range []string{
		`{.phase} == "Ready"`,
		`{..a} == "b"`,
		`{.items[?(@.a == "b")].a} == "b"`,
		`{.items[0,1]} != "x"`,
		`{.items[*].a} == b`,
	} {
		if err := CheckAnnotations(annotatedWith(jsonArray(e))); err != nil {
			t.Errorf("CheckAnnotations(%s) = %v", e, err)
		}
	}
}
