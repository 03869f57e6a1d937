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

// TestAdmissionDeniedReason: a request an admission webhook or a ValidatingAdmissionPolicy
// refused is AdmissionDenied, with a blocker that says to change what the policy checks; a
// request RBAC refused stays PermissionDenied.
func TestAdmissionDeniedReason(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	rel := &v1alpha1.Release{}
	rel.Namespace = "team-a"
	for _, tt := range []struct {
		name       string
		err        error
		reason     string
		kind, next string
	}{
		{"webhook", apierrors.NewForbidden(cm, "web", errors.New(`admission webhook "policy.example.com" denied the request: no`)),
			ReasonAdmissionDenied, "admission", "admission policy refused"},
		{"policy", apierrors.NewForbidden(cm, "web", errors.New(`ValidatingAdmissionPolicy 'no-keys' with binding 'no-keys' denied request: the key is not allowed`)),
			ReasonAdmissionDenied, "admission", "admission policy refused"},
		{"rbac", apierrors.NewForbidden(cm, "web", errors.New(`User "system:serviceaccount:team-a:deployer" cannot create resource "configmaps" in API group "" in the namespace "team-a"`)),
			ReasonPermissionDenied, "permission", "grant the Release's ServiceAccount"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := fmt.Errorf("apply: %w", tt.err)
			if got := reasonOf(err, ReasonFailed); got != tt.reason {
				t.Errorf("reasonOf = %s, want %s", got, tt.reason)
			}
			b := blockersOf(err, rel)
			if len(b) != 1 || b[0].Kind != tt.kind || b[0].Object != "configmaps/web" || !strings.Contains(b[0].Next, tt.next) {
				t.Errorf("blockers %+v, want one of kind %s on configmaps/web whose next step says %q", b, tt.kind, tt.next)
			}
		})
	}
}
