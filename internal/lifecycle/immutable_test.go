package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestImmutableFields(t *testing.T) {
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	invalid := func(errs ...*field.Error) error {
		// As the cluster client wraps the API server's refusal.
		return fmt.Errorf("Deployment.apps/ns/web: apply: %w", apierrors.NewInvalid(gk, "web", errs))
	}
	selector := field.NewPath("spec", "selector")
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"none", nil, nil},
		{"not a refusal of the API server", errors.New("connection refused"), nil},
		{"the selector", invalid(field.Invalid(selector, "x", "field is immutable")), []string{"spec.selector"}},
		{"a Service's IP", invalid(field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), "10.0.0.1", "may not change once set")),
			[]string{"spec.clusterIPs[0]"}},
		{"an immutable field and another refusal", invalid(field.Invalid(selector, "x", "field is immutable"),
			field.Required(field.NewPath("spec", "template"), "")), nil},
		{"another refusal", invalid(field.Required(field.NewPath("spec", "template"), "")), nil},
		{"a conflict", apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("changed")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := immutableFields(tc.err); !slices.Equal(got, tc.want) {
				t.Errorf("immutableFields = %q, want %q", got, tc.want)
			}
		})
	}
}
