package controller_test

import (
	"fmt"
	"testing"
	"time"

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

// allButConfigMaps is every right in a namespace but those on ConfigMaps.
var allButConfigMaps = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"secrets", "events", "pods", "services", "serviceaccounts", "endpoints", "persistentvolumeclaims"}, Verbs: []string{"*"}},
	{APIGroups: []string{"apps", "batch", "coordination.k8s.io", "events.k8s.io", "rbac.authorization.k8s.io", "policy", "networking.k8s.io", "discovery.k8s.io"},
		Resources: []string{"*"}, Verbs: []string{"*"}},
}

// requestReconcile sets the Release's reconcile request to value.
func requestReconcile(t *testing.T, c client.Client, rel *v1alpha1.Release, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.ReconcileRequestAnnotation, value)
	if err := c.Patch(t.Context(), rel, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseReconcileRequest: a Release whose install failed for a cause outside its spec (its
// account may not write ConfigMaps) and spent its retries is tried once more when its reconcile
// request changes, once the cause is gone; a request on a Ready Release records its value and
// releases nothing.
func TestReleaseReconcileRequest(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	releasetest.ServiceAccount(t, env, "deployer", allButConfigMaps...)
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
	})
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, chart), "deployer")
	rel.Spec.Install = &v1alpha1.InstallSpec{OperationSpec: v1alpha1.OperationSpec{Retries: 1, RetryBackoff: &metav1.Duration{Duration: time.Second}}}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "has spent its retries", func(rel *v1alpha1.Release) bool {
		s := condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue && s.Reason == controller.ReasonRetriesExhausted
	})
	if got.Status.Failures != 2 || got.Status.LastHandledReconcileAt != "" {
		t.Errorf("status.failures = %d, lastHandledReconcileAt %q; want 2 and none", got.Status.Failures, got.Status.LastHandledReconcileAt)
	}
	generation := got.Generation

	// The cause is removed outside the spec; a reconcile request tries the install again.
	releasetest.ServiceAccount(t, env, "configmaps", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}})
	grant := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-configmaps", Namespace: env.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: env.Namespace}},
	}
	if err := c.Create(t.Context(), grant); err != nil {
		t.Fatal(err)
	}
	asked := time.Now().UTC().Format(time.RFC3339Nano)
	requestReconcile(t, c, got, asked)
	got = waitFor(t, c, env.Namespace, "web", "is installed at the request", func(rel *v1alpha1.Release) bool {
		return readyAt(1)(rel) && rel.Status.LastHandledReconcileAt == asked
	})
	if got.Generation != generation || got.Status.Failures != 0 {
		t.Errorf("generation %d (was %d), failures %d; want the same spec and no failure", got.Generation, generation, got.Status.Failures)
	}
	if s := condition(got, controller.ConditionStalled); s != nil {
		t.Errorf("Stalled condition after the install: %+v", s)
	}
	history := len(got.Status.History)
	if history != 3 || got.Status.History[0].Outcome == "Failed" {
		t.Errorf("history: %+v, want two failed attempts and the requested one", got.Status.History)
	}

	// On a Ready Release a request is handled, and nothing is released again.
	again := asked + "-again"
	requestReconcile(t, c, got, again)
	got = waitFor(t, c, env.Namespace, "web", "has handled the second request", func(rel *v1alpha1.Release) bool {
		return rel.Status.LastHandledReconcileAt == again
	})
	if !readyAt(1)(got) || len(got.Status.History) != history {
		t.Errorf("after a request on a Ready Release: revision %d, history %d (was %d); want it as it was",
			got.Status.Revision, len(got.Status.History), history)
	}
	deleteRelease(t, c, got)
}
