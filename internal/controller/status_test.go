package controller

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller/inputs"
)

func TestReasonOf(t *testing.T) {
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("namespace is being terminated"))
	terminating.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "x", errors.New("no"))
	values := func(path, data string) error {
		ref := v1alpha1.ValuesReference{Kind: "Secret", Name: "v", Key: "k", TargetPath: path}
		_, err := inputs.MergeValues("team-a", []inputs.ValuesSource{{Ref: ref, Data: []byte(data)}}, nil)
		return err
	}
	notAMap, tooDeep := values("", "- 1\n"), values("a[65537]", "v")
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
		{"values that are not a map", notAMap, ReasonInvalidValues, ""},
		{"a targetPath over a limit", fmt.Errorf("read the values: %w", tooDeep), ReasonInvalidValues, ""},
		{"values missing", fmt.Errorf("read the values: %w", &inputs.MissingError{Reason: ReasonValuesMissing, Kind: "Secret", Name: "v"}), ReasonValuesMissing, ""},
		{"a missing key no reason was given", &inputs.MissingError{Kind: "Secret", Name: "v"}, ReasonFailed, ""},
		{"other", errors.New("boom"), ReasonFailed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reasonOf(tt.err, ReasonFailed); got != tt.want {
				t.Errorf("reasonOf = %s, want %s", got, tt.want)
			}
			var kind string
			if b := blockersOf(tt.err, &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}}); len(b) > 0 {
				kind = b[0].Kind
			}
			if kind != tt.wantBlocker {
				t.Errorf("blocker kind %q, want %q", kind, tt.wantBlocker)
			}
		})
	}
}

// TestPermissionBlockerOfARemoteRelease checks that a refused permission of a Release released
// into another cluster names the accounts of both clusters, not the local one alone.
func TestPermissionBlockerOfARemoteRelease(t *testing.T) {
	t.Parallel()
	forbidden := fmt.Errorf("install: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no")))
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}}
	rel.Spec.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.KubeConfigSecretReference{Name: "workload"}}
	for account, want := range map[string]string{
		"":         "the identity of the kubeconfig in Secret workload",
		"deployer": "ServiceAccount team-a/deployer, which spec.serviceAccountName impersonates there",
	} {
		rel.Spec.ServiceAccountName = account
		b := blockersOf(forbidden, rel)
		if len(b) != 1 || !strings.Contains(b[0].Next, want) || !strings.Contains(b[0].Next, "ServiceAccount team-a/default") {
			t.Errorf("account %q: blockers %+v, want a permission blocker naming %q and the local default account", account, b, want)
		}
	}
}

func TestFirstLineKeepsWhatAColonIntroduces(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"one line", "one line"},
		{"first\nsecond", "first"},
		{"validation failed, nothing was changed:\nConfigMap/ns/a: spec is invalid\nConfigMap/ns/b: too", "validation failed, nothing was changed: ConfigMap/ns/a: spec is invalid"},
		{"nested:\n  inner:\n    detail\nmore", "nested: inner: detail"},
		{"ends with a colon:\n", "ends with a colon:"},
	} {
		if got := firstLine(c.in); got != c.want {
			t.Errorf("firstLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
