package controller_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReleaseActsWithItsServiceAccountsRightsOnly gives a Release a ServiceAccount that may do
// releasetest.Everything in its namespace but touch Deployments. The controller itself may: were its rights
// used, the Deployment would be created.
func TestReleaseActsWithItsServiceAccountsRightsOnly(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.ServiceAccount(t, env, "no-deployments",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"*"}},
		rbacv1.PolicyRule{APIGroups: []string{"batch", "coordination.k8s.io", "events.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, webChart(t))
	ctl := newController(t, env)
	ctl.start()
	if err := c.Create(t.Context(), releaseOf(t, env.Namespace, "web", repo.URL, "web", "no-deployments", "{replicas: 2}")); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "web", "is stalled", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && rel.Status.ObservedGeneration == rel.Generation
	})
	if s := releasetest.Condition(got, controller.ConditionStalled); s.Reason != controller.ReasonPermissionDenied {
		t.Errorf("Stalled reason %s (%s), want %s", s.Reason, s.Message, controller.ReasonPermissionDenied)
	}
	if len(got.Status.Blockers) != 1 {
		t.Fatalf("blockers: %+v, want the missing permission", got.Status.Blockers)
	}
	if b := got.Status.Blockers[0]; b.Kind != "permission" || !strings.Contains(b.Object, "deployments") || !strings.Contains(b.Next, "ServiceAccount") {
		t.Errorf("blocker %+v, want the permission on deployments, and to grant it to the ServiceAccount", b)
	}
	// Nothing was created: not the Deployment with the controller's rights, and, as the plan
	// could not succeed, nothing else either.
	berthtest.AssertNoObject(t, env, "apps/v1", "Deployment", "web")
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)

	// Granted the right, the account releases it once the Release changes.
	_, err := env.Client.RbacV1().Roles(env.Namespace).Patch(t.Context(), "no-deployments", types.JSONPatchType,
		[]byte(`[{"op":"add","path":"/rules/-","value":{"apiGroups":["apps"],"resources":["deployments"],"verbs":["*"]}}]`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if _, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("Deployment web after the right was granted: %v", err)
	}
	ctl.running()
}
