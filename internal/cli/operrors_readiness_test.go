package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berthdev/berth/internal/readiness"
)

func TestExplainReadinessAnnotationOverBudget(t *testing.T) {
	err := fmt.Errorf("Widget w: %w", &readiness.ExpressionError{Annotation: readiness.AnnotationSuccess, Expression: `{..a..b} == 1`,
		Err: fmt.Errorf("JSONPath {..a..b}: %w", readiness.ErrRecursiveDescents)})
	got := explainOperationError(err).Error()
	if !strings.Contains(got, `{..a..b} == 1`) || !strings.Contains(got, "one recursive descent") {
		t.Errorf("explainOperationError = %q, want the expression and what the budget allows", got)
	}
}
