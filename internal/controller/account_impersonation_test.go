package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/api/v1alpha1"
)

// TestImpersonationForbiddenReason: the API server refusing the controller to act as a
// ServiceAccount is ImpersonationForbidden, whose blocker says to list the namespace; another
// refusal stays PermissionDenied, to be granted to the Release's account.
func TestImpersonationForbiddenReason(t *testing.T) {
	// As the API server's impersonation filter answers.
	impersonation := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "deployer",
		errors.New(`User "system:serviceaccount:berth-system:berth-controller" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team-a"`))
	other := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web",
		errors.New(`User "system:serviceaccount:team-a:deployer" cannot create resource "deployments" in API group "apps" in the namespace "team-a"`))
	rel := &v1alpha1.Release{}
	rel.Namespace = "team-a"
	for _, tt := range []struct {
		name   string
		err    error
		reason string
		next   string
	}{
		{"impersonation", fmt.Errorf("read the records: %w", impersonation), ReasonImpersonationForbidden, "impersonateNamespaces"},
		{"the account's own right", fmt.Errorf("apply: %w", other), ReasonPermissionDenied, "grant the Release's ServiceAccount"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonOf(tt.err, ReasonFailed); got != tt.reason {
				t.Errorf("reasonOf = %s, want %s", got, tt.reason)
			}
			b := blockersOf(tt.err, rel)
			if len(b) != 1 || !strings.Contains(b[0].Next, tt.next) || !strings.Contains(b[0].Next, "team-a") {
				t.Errorf("blockers %+v, want one whose next step says %q for namespace team-a", b, tt.next)
			}
		})
	}
}
