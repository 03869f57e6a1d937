package controller

import (
	"errors"
	"fmt"

	"github.com/berthdev/berth/internal/controller/api/v1alpha1"
	"github.com/berthdev/berth/internal/readiness"
)

// healthChecksOf compiles spec.healthChecks; an expression that is not CEL, or a check the
// controller cannot use, is an invalid spec, named by its field.
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
		if ce.Expression != "" {
			return nil, invalid(field, "%q is not a CEL expression the controller can evaluate: %v", ce.Expression, ce.Err)
		}
		return nil, invalid(field, "%v", ce.Err)
	}
	if err != nil {
		return nil, invalid("healthChecks", "%v", err)
	}
	return compiled, nil
}
