package controller

import (
	"errors"
	"fmt"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/readiness"
)

// ReasonInvalidHealthCheck says a health check of spec.healthChecks cannot be used: it is
// incomplete, is not CEL, does not type-check, is too long, matches a pattern that does not
// parse or compiles to too large a program, or its estimated cost is over the limit. Nothing of
// it was evaluated.
const ReasonInvalidHealthCheck = "InvalidHealthCheck"

// healthChecksOf compiles spec.healthChecks; a check the controller cannot use is an invalid
// spec with reason InvalidHealthCheck, named by its field, with the expression and, when it
// is too costly, its estimated cost and the limit.
func healthChecksOf(in []v1alpha1.HealthCheckExpressions) (*readiness.Checks, error) {
	checks := make([]readiness.HealthCheck, len(in))
	for i, hc := range in {
		checks[i] = readiness.HealthCheck{APIVersion: hc.APIVersion, Kind: hc.Kind,
			Current: hc.Current, InProgress: hc.InProgress, Failed: hc.Failed}
	}
	compiled, err := readiness.CompileChecks(checks)
	var ce *readiness.CheckError
	if errors.As(err, &ce) {
		field := fmt.Sprintf("healthChecks[%d].%s", ce.Index, ce.Field)
		var cost *readiness.CostError
		var long *readiness.TooLongError
		var regex *readiness.RegexError
		switch {
		case errors.As(err, &cost):
			return nil, invalidHealthCheck(field, "%q has an estimated cost of %d, over the limit of %d (the estimate is for an object of the largest size): loop over fewer lists, build smaller strings, or match simpler patterns",
				ce.Expression, cost.Estimated, cost.Limit)
		case errors.As(err, &regex):
			return nil, invalidHealthCheck(field, "%q: %v", ce.Expression, regex)
		case errors.As(err, &long):
			return nil, invalidHealthCheck(field, "the expression is %d bytes long, over the limit of %d", long.Length, long.Max)
		case ce.Expression != "":
			return nil, invalidHealthCheck(field, "%q is not a CEL expression the controller can evaluate: %v", ce.Expression, ce.Err)
		}
		return nil, invalidHealthCheck(field, "%v", ce.Err)
	}
	if err != nil {
		return nil, invalidHealthCheck("healthChecks", "%v", err)
	}
	return compiled, nil
}

func invalidHealthCheck(field, format string, args ...any) *SpecError {
	return &SpecError{Reason: ReasonInvalidHealthCheck, Field: field, Msg: fmt.Sprintf(format, args...)}
}
