package dashboard

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/dashboard"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseObjectShowsConditionsAndBlockers: a Release object's page shows its conditions, the
// blockers its controller reported and its dependencies; Retry, once confirmed, asks the
// controller for one more attempt.
func TestReleaseObjectShowsConditionsAndBlockers(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	ctx := t.Context()
	db := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: env.Namespace},
		Spec: v1alpha1.ReleaseSpec{Chart: v1alpha1.ChartSource{Repository: "https://charts.example.invalid", Name: "db", Version: "1.0.0"}}}
	web := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace},
		Spec: v1alpha1.ReleaseSpec{Chart: v1alpha1.ChartSource{Repository: "https://charts.example.invalid", Name: "web", Version: "2.0.0"},
			DependsOn: []v1alpha1.DependencyReference{{Name: "db"}}}}
	for _, r := range []*v1alpha1.Release{db, web} {
		if err := c.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	web.Status = v1alpha1.ReleaseStatus{
		ObservedGeneration: web.Generation, ReleaseName: "web", TargetNamespace: env.Namespace, Revision: 4,
		ChartName: "web", ChartVersion: "2.0.0", Failures: 2, LastHandledReconcileAt: "",
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Blocked", Message: "uninstall of an old object is held",
			LastTransitionTime: metav1.Now(), ObservedGeneration: web.Generation}},
		Blockers: []v1alpha1.Blocker{{Kind: "finalizer", Object: "ConfigMap/" + env.Namespace + "/web-old",
			Message: "waits for finalizer example.com/hold", Next: "find the controller of example.com/hold"}},
	}
	if err := c.Status().Update(ctx, web); err != nil {
		t.Fatal(err)
	}

	base := serve(t, env, dashboard.Options{AllowActions: true}, "")
	p := berthtest.Browser(t)
	p.Navigate(base + "/#/o/" + devclusterContext + "/" + env.Namespace + "/web")
	p.WaitText(`#conditions tr[data-condition="Ready"]`, "Blocked")
	p.WaitText("#object-blockers", "example.com/hold")
	p.WaitText("#produced", env.Namespace+"/web")
	p.WaitText(".grid2", "db")
	p.Screenshot("release-object")

	p.Click("#action-retry")
	p.WaitVisible("#confirm-button")
	p.Click("#confirm-button")
	p.WaitText("#action-done", "another attempt requested")
	var got v1alpha1.Release
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha1.ReconcileRequestAnnotation] == "" {
		t.Errorf("retry did not set %s: annotations %v", v1alpha1.ReconcileRequestAnnotation, got.Annotations)
	}

	// The list of Release objects shows both.
	p.Navigate(base + "/")
	p.Click("#tab-controller")
	p.Type("#namespace-filter", env.Namespace)
	p.WaitText(`#object-table tr[data-object="`+env.Namespace+`/web"]`, "Blocked")
	p.WaitText(`#object-table tr[data-object="`+env.Namespace+`/db"]`, "db")
}
