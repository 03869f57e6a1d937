package controller_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/test/releasetest"
)

// readyAt says the Release is Ready for its current generation at revision.
func readyAt(revision int) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		return isReady(rel) && rel.Status.Revision == revision
	}
}

// isReady says the Release is Ready for its current generation.
func isReady(rel *v1alpha1.Release) bool {
	c := releasetest.Condition(rel, controller.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == rel.Generation &&
		rel.Status.ObservedGeneration == rel.Generation
}

// releaseOf is a Release of the chart name 0.1.0 served by repoURL, with values, acting as
// serviceAccount.
func releaseOf(t testing.TB, ns, name, repoURL, chartName, serviceAccount, values string) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	manifest := `
apiVersion: berth.dev/v1alpha1
kind: Release
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  serviceAccountName: ` + serviceAccount + `
  chart: {repository: "` + repoURL + `", name: ` + chartName + `, version: "0.1.0"}
  values: ` + values + `
`
	if err := yaml.Unmarshal([]byte(manifest), &rel); err != nil {
		t.Fatal(err)
	}
	return &rel
}
