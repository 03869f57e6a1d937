package berthtest

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/testenv"
)

// AssertNoObject checks that no object of the kind, given as in a manifest ("batch/v1", "Job"),
// is named one of names: in the test's namespace when the kind is namespaced, in the cluster
// otherwise. An object that cannot be read fails the check too.
func AssertNoObject(t testing.TB, env *testenv.Env, apiVersion, kind string, names ...string) {
	t.Helper()
	ri := env.Resource(t, apiVersion, kind)
	for _, name := range names {
		_, err := ri.Get(t.Context(), name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s %s exists (or cannot be read: %v), want it gone", kind, name, err)
		}
	}
}
