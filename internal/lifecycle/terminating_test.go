package lifecycle_test

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/lifecycle"
)

func TestNamespaceTerminating(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "drain",
		errors.New("unable to create new content in namespace team-a because it is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Field: "team-a"}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused in a terminating namespace", terminating, true},
		{"wrapped", fmt.Errorf("pre-delete hook Job/team-a/drain: create: %w", terminating), true},
		{"forbidden for want of a permission", apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no")), false},
		{"another error", errors.New("connection refused"), false},
		{"none", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lifecycle.NamespaceTerminating(tt.err); got != tt.want {
				t.Errorf("NamespaceTerminating(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
