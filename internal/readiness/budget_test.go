package readiness

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/berthdev/berth/internal/allocs"
)

// tenReplaces is 'a' replaced ten times by ten of itself: 10 GB once evaluated.
var tenReplaces = "'a'" + strings.Repeat(".replace('a','aaaaaaaaaa')", 10) + " == ''"

func TestCompileChecksBudget(t *testing.T) {
	long := "self.status.phase == '" + strings.Repeat("x", MaxExpressionLength) + "'"
	tests := []struct {
		name, expr string
		want       any
	}{
		{"ten replaces", tenReplaces, &CostError{}},
		{"replaces of the object's data", "self.metadata.name" + strings.Repeat(".replace('a','aaaaaaaaaa')", 3) + " == ''", &CostError{}},
		{"a loop within a loop", "self.spec.items.exists(a, self.spec.items.exists(b, a == b))", &CostError{}},
		{"too long", long, &TooLongError{}},
		{"format", "'%s'.format([self.spec]) == ''", nil},
		{"quote", "strings.quote(self.metadata.name) == ''", nil},
		{"ill-typed", "self.status.phase == 'Ready' && 1 + 'a' == 2", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := CompileChecks([]HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: "true", Failed: tt.expr}})
			var ce *CheckError
			if !errors.As(err, &ce) || ce.Index != 0 || ce.Field != "failed" || ce.Expression != tt.expr {
				t.Fatalf("CompileChecks = %v, want a *CheckError of failed, naming the expression", err)
			}
			switch tt.want.(type) {
			case *CostError:
				var cost *CostError
				if !errors.As(err, &cost) || cost.Estimated <= EstimatedCostLimit || cost.Limit != EstimatedCostLimit {
					t.Errorf("CompileChecks = %v, want a *CostError over %d", err, EstimatedCostLimit)
				}
			case *TooLongError:
				var tl *TooLongError
				if !errors.As(err, &tl) || tl.Max != MaxExpressionLength {
					t.Errorf("CompileChecks = %v, want a *TooLongError", err)
				}
			}
		})
	}
}

func TestCompileChecksWithinBudget(t *testing.T) {
	for _, expr := range []string{
		"self.status.phase == 'Ready'",
		"status.phase == 'Ready'",
		"self.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		"self.status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')",
		"self.metadata.generation == self.status.observedGeneration",
		"self.metadata.name.replace('-', '_').lowerAscii() == 'x'",
		"self.data.keys.split(',').size() > 1",
		"'a'" + strings.Repeat(".replace('a','aaaaaaaaaa')", 4) + " != ''",
	} {
		if _, err := CompileChecks([]HealthCheck{{APIVersion: "example.com/v1", Kind: "Widget", Current: expr}}); err != nil {
			t.Errorf("CompileChecks(%s) = %v", expr, err)
		}
	}
}

// configMap is a ConfigMap whose data is data.
func configMap(data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": data,
	}}
}

func TestEvaluationBudget(t *testing.T) {
	mib := strings.Repeat("a", 1<<20)
	tests := []struct {
		name, expr string
		data       map[string]any
		want       Failure
	}{
		// Estimated within the limit, the object's string is large: 10 MiB is not built.
		{"replace of a large string", "self.data.x.replace('a', 'aaaaaaaaaa') == ''", map[string]any{"x": mib}, FailureTooLarge},
		{"join of a large list", "[self.data.x, self.data.x, self.data.x, self.data.x].join() == ''", map[string]any{"x": mib}, FailureTooLarge},
		{"split of a large string", "self.data.x.split('').size() == 0", map[string]any{"x": mib}, FailureTooLarge},
		// Each call is within the bound; together they spend the cost limit.
		{"calls that add up", "self.data.x" + strings.Repeat(".lowerAscii()", 8) + " == ''", map[string]any{"x": mib}, FailureCost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := CompileChecks([]HealthCheck{{APIVersion: "v1", Kind: "ConfigMap", Current: tt.expr}})
			if err != nil {
				t.Fatal(err)
			}
			obj := configMap(tt.data)
			var got Result
			n := uint64(allocs.Of(func() { got = Compute(obj, Options{Checks: c}) }))
			if got.State != InProgress || !strings.HasSuffix(got.Message, "("+string(tt.want)+")") {
				t.Errorf("Compute = %s (%s), want in progress, %s", got.State, got.Message, tt.want)
			}
			if n > 32<<20 {
				t.Errorf("the evaluation allocated %d MiB, more than 32", n>>20)
			}
		})
	}
}

// TestEvaluationBudgetUnestimated evaluates ten replaces of the object's data without the
// estimate that refuses them: the evaluation stops before it builds more than maxStringSize.
func TestEvaluationBudgetUnestimated(t *testing.T) {
	env, err := newEnv()
	if err != nil {
		t.Fatal(err)
	}
	expr := "self.data.x" + strings.Repeat(".replace('a','aaaaaaaaaa')", 10) + " == ''"
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prog, err := program(env, ast)
	if err != nil {
		t.Fatal(err)
	}
	e := &celExpression{text: expr, prog: prog}
	obj := configMap(map[string]any{"x": "a"})
	var evalErr error
	n := uint64(allocs.Of(func() { _, evalErr = e.holds(map[string]any{"self": obj.Object}) }))
	if f := failureOf(evalErr); evalErr == nil || f != FailureTooLarge && f != FailureCost {
		t.Errorf("holds = %v, want %s or %s", evalErr, FailureTooLarge, FailureCost)
	}
	t.Logf("%s: %v, %d KiB allocated", expr, evalErr, n>>10)
	if n > 32<<20 {
		t.Errorf("the evaluation allocated %d MiB, more than 32", n>>20)
	}
}

// TestEvaluationErrorsQuoteNoData: an expression that indexes a map by a secret value fails
// with "no such key: VALUE" in cel-go's words; the result says the kind of failure only.
func TestEvaluationErrorsQuoteNoData(t *testing.T) {
	password := base64.StdEncoding.EncodeToString([]byte("hunter2-very-secret"))
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"},
		"data": map[string]any{"password": password},
	}}
	for _, expr := range []string{
		"self.data[self.data.password] == 'x'",
		"int(self.data.password) == 1",
		"self.data.password + 1 == 2",
		"'x'.matches(self.data.password + '(')",
		"self.data.password",
		"timestamp(self.data.password) > timestamp('2020-01-01T00:00:00Z')",
		"self.data.password.substring(100) == ''",
	} {
		c, err := CompileChecks([]HealthCheck{{APIVersion: "v1", Kind: "Secret", Current: expr}})
		if err != nil {
			t.Errorf("CompileChecks(%s) = %v", expr, err)
			continue
		}
		got := Compute(secret, Options{Checks: c})
		if strings.Contains(got.Message, password) || strings.Contains(got.Message, "hunter2") {
			t.Errorf("Compute(%s) = %q: quotes the secret", expr, got.Message)
		}
		if !strings.HasPrefix(got.Message, "waiting for health check current: "+expr+" (") {
			t.Errorf("Compute(%s) = %q, want the expression and the kind of failure", expr, got.Message)
		}
	}
}

func TestFailureOf(t *testing.T) {
	c, err := CompileChecks([]HealthCheck{{APIVersion: "v1", Kind: "Secret", Current: "self.data[self.data.password] == 'x'"}})
	if err != nil {
		t.Fatal(err)
	}
	got := Compute(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": map[string]any{"password": "cA=="},
	}}, Options{Checks: c})
	if !strings.HasSuffix(got.Message, "(no such key)") {
		t.Errorf("Compute = %q, want it to say no such key", got.Message)
	}
}

// TestEvaluationDeadline: an evaluation whose context is done stops within its loop, and says
// it timed out.
func TestEvaluationDeadline(t *testing.T) {
	env, err := newEnv()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile("self.spec.items.all(x, x == 1)")
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prog, err := program(env, ast)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 10000)
	for i := range items {
		items[i] = int64(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = prog.ContextEval(ctx, map[string]any{"self": map[string]any{"spec": map[string]any{"items": items}}})
	if err == nil || failureOf(err) != FailureTimeout {
		t.Errorf("ContextEval = %v, want %s", err, FailureTimeout)
	}
}
