package controller

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestReasonOf(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("namespace is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no"))
	tests := []struct {
		name        string
		err         error
		want        string
		wantBlocker string
	}{
		{"a cycle", &DependencyError{Reason: ReasonDependencyCycle, Cycle: []string{"a", "b", "a"}}, ReasonDependencyCycle, ""},
		{"waiting", fmt.Errorf("check: %w", &DependencyError{Reason: ReasonDependencyNotReady}), ReasonDependencyNotReady, ""},
		{"namespace terminating", fmt.Errorf("install: %w", terminating), ReasonNamespaceTerminating, ""},
		{"permission", fmt.Errorf("install: %w", forbidden), ReasonPermissionDenied, "permission"},
		{"other", errors.New("boom"), ReasonFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonOf(tt.err, ReasonFailed); got != tt.want {
				t.Errorf("reasonOf = %s, want %s", got, tt.want)
			}
			var kind string
			if b := blockersOf(tt.err, "team-a"); len(b) > 0 {
				kind = b[0].Kind
			}
			if kind != tt.wantBlocker {
				t.Errorf("blocker kind %q, want %q", kind, tt.wantBlocker)
			}
		})
	}
}
