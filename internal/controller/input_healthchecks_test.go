package controller

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/readiness"
)

// tenReplaces is 'a' replaced ten times by ten of itself: 10 GB once evaluated.
var tenReplaces = "'a'" + strings.Repeat(".replace('a','aaaaaaaaaa')", 10) + " == ''"

func TestDesiredOfHealthChecks(t *testing.T) {
	release := func(checks ...v1alpha1.HealthCheckExpressions) *v1alpha1.Release {
		return &v1alpha1.Release{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a"},
			Spec: v1alpha1.ReleaseSpec{
				Chart:        v1alpha1.ChartSource{Repository: "https://charts.example.test", Name: "web", Version: "0.3.0"},
				HealthChecks: checks,
			},
		}
	}
	widget := v1alpha1.HealthCheckExpressions{APIVersion: "example.com/v1", Kind: "Widget", Current: "self.status.phase == 'Ready'"}

	d, err := desiredOf(release())
	if err != nil || d.HealthChecks != nil {
		t.Fatalf("no health checks: %v, %v; want none and no error", d.HealthChecks, err)
	}
	d, err = desiredOf(release(widget))
	if err != nil || d.HealthChecks == nil {
		t.Fatalf("a valid health check: %v, %v; want it compiled", d.HealthChecks, err)
	}

	tests := []struct {
		name   string
		checks []v1alpha1.HealthCheckExpressions
		field  string
		says   string
	}{
		{"current not CEL", []v1alpha1.HealthCheckExpressions{{APIVersion: "example.com/v1", Kind: "Widget", Current: "self.status.phase =="}},
			"healthChecks[0].current", `"self.status.phase =="`},
		{"failed not CEL", []v1alpha1.HealthCheckExpressions{widget, {APIVersion: "example.com/v1", Kind: "Gadget", Current: "true", Failed: "self.("}},
			"healthChecks[1].failed", `"self.("`},
		{"no current", []v1alpha1.HealthCheckExpressions{{APIVersion: "example.com/v1", Kind: "Widget"}}, "healthChecks[0].current", "required"},
		{"a kind twice", []v1alpha1.HealthCheckExpressions{widget, widget}, "healthChecks[1].kind", "already"},
		{"too costly", []v1alpha1.HealthCheckExpressions{{APIVersion: "example.com/v1", Kind: "Widget", Current: tenReplaces}},
			"healthChecks[0].current", "estimated cost of"},
		{"a pattern too large", []v1alpha1.HealthCheckExpressions{{APIVersion: "example.com/v1", Kind: "Widget", Current: "self.status.phase.matches('(a|b){1000}')"}},
			"healthChecks[0].current", "compiles to more than 1000 RE2 instructions"},
		{"a match too costly", []v1alpha1.HealthCheckExpressions{{APIVersion: "example.com/v1", Kind: "Widget", Current: "self.status.phase.matches('[ab]*a[ab]{500}c')"}},
			"healthChecks[0].current", "match simpler patterns"},
		{"too long", []v1alpha1.HealthCheckExpressions{{APIVersion: "example.com/v1", Kind: "Widget", Current: "'" + strings.Repeat("a", readiness.MaxExpressionLength) + "' == ''"}},
			"healthChecks[0].current", "over the limit of 1024"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := desiredOf(release(tt.checks...))
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("desiredOf = %v, want a SpecError", err)
			}
			if se.Field != tt.field || se.Reason != ReasonInvalidHealthCheck || !strings.Contains(se.Msg, tt.says) {
				t.Errorf("desiredOf = %v (field %s, reason %s), want field %s, %s, saying %s", err, se.Field, se.Reason, tt.field, ReasonInvalidHealthCheck, tt.says)
			}
		})
	}
}
