package readiness

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/allocs"
)

// fuzzObject is a small object, with a Secret's data too, and a string of 512 KiB
// (spec.text) for the functions whose cost grows with a string's length.
func fuzzObject() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "generation": int64(2), "labels": map[string]any{"a": "b"}},
		"data":     map[string]any{"password": "aHVudGVyMg=="},
		"spec":     map[string]any{"items": []any{"a", "b", int64(3), 1.5, true, nil}, "text": strings.Repeat("ab", 256<<10)},
		"status": map[string]any{"phase": "Ready", "observedGeneration": int64(2), "conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "message": "fine"},
		}},
	}}
}

// maxFuzzEvaluation bounds the time of evaluating the three expressions of a check: each stops
// at EvalTimeout, and the one call that may run past it (a match, which runs to its end once
// started) costs at most CostLimit, about as long.
const maxFuzzEvaluation = 10 * EvalTimeout

// FuzzCompileChecks compiles a health check and evaluates it on a small object: neither may
// panic, a compiled check's evaluation stays within the budget, in memory and in time
// (maxFuzzEvaluation), and its message never quotes the object's secret.
func FuzzCompileChecks(f *testing.F) {
	for _, s := range []string{
		"self.status.phase == 'Ready'",
		"status.phase == 'Ready'",
		"has(self.status.paused) && self.status.paused",
		"self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		"self.data[self.data.password] == 'x'",
		"int(self.data.password) == 1",
		tenReplaces,
		"self.data.password" + strings.Repeat(".replace('a','aaaaaaaaaa')", 10) + " == ''",
		"self.spec.items.exists(a, self.spec.items.exists(b, self.spec.items.exists(c, a == b)))",
		"self.spec.items.map(a, self.data.password + self.data.password).join() == ''",
		"'%s'.format([self.spec]) == ''",
		"strings.quote(self.data.password) == ''",
		"[1,2,3].map(x, [1,2,3].map(y, [1,2,3].map(z, x*y*z))).size() > 0",
		"self.data.password.split('').join('--') == ''",
		"self.data.password.replace('', self.data.password) == ''",
		"self.metadata.name.matches('(a+)+$')",
		"self.spec.text.matches('[ab]*a[ab]{10}c')",
		"self.spec.text.matches('[ab]*a[ab]{40}c')",
		"self.spec.text.matches('[ab]*a[ab]{300}c')",
		"self.spec.text.matches('(a|b){1000}c')",
		"'ab'.matches(self.spec.text)",
		"self.spec.items.exists(i, string(i).matches('^[ab]+$'))",
		"1/0 == 1",
		"self.spec.items[10] == 1",
		"self.status.phase",
		"",
	} {
		f.Add(s)
	}
	obj := fuzzObject()
	f.Fuzz(func(t *testing.T, expr string) {
		c, err := CompileChecks([]HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: expr, Failed: expr, InProgress: expr}})
		if err != nil {
			return
		}
		var got Result
		start := time.Now()
		n := allocs.Of(func() { got = Compute(obj, Options{Checks: c}) })
		took := time.Since(start)
		if n > 64<<20 {
			t.Errorf("evaluating %q allocated %d MiB", expr, n>>20)
		}
		if took > maxFuzzEvaluation {
			t.Errorf("evaluating %q took %v, more than %v", expr, took, maxFuzzEvaluation)
		}
		if strings.Contains(got.Message, "aHVudGVyMg") && !strings.Contains(expr, "aHVudGVyMg") {
			t.Errorf("evaluating %q: message %q quotes the secret", expr, got.Message)
		}
	})
}

// FuzzReadinessAnnotations reads a readiness annotation and evaluates it on a small object:
// neither may panic.
func FuzzReadinessAnnotations(f *testing.F) {
	for _, s := range []string{
		`["{.phase} == \"Ready\""]`,
		`["{.conditions[?(@.type==\"Ready\")].status} == \"True\""]`,
		`["{..type} == Ready"]`,
		`["{..conditions..type} == Ready"]`,
		`["{.conditions[?(@.a[?(@.b)])].x} == 1"]`,
		`["{.conditions[0,0,0][0,0,0]} == 1"]`,
		`["{.observedGeneration} >= 2"]`,
		`["{.phase} == 'Ready'", "{.phase} != null"]`,
		`["{.phase}"]`,
		`["{[0:100000000:1]} == 1"]`,
		`not json`,
		`[1, 2]`,
		``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		obj := fuzzObject()
		unstructured.SetNestedField(obj.Object, raw, "metadata", "annotations", AnnotationSuccess)
		unstructured.SetNestedField(obj.Object, raw, "metadata", "annotations", AnnotationFailure)
		_ = CheckAnnotations(obj)
		_ = Compute(obj, Options{})
	})
}
