package cli_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/cli"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/reconcile"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// TestReconcileRelease: berth reconcile release asks a controller for one more attempt at a
// failed Release and waits for it: it exits non-zero with the Ready condition while the cause
// stands, and, once the cause is fixed outside the spec, the Release is installed and it
// succeeds.
func TestReconcileRelease(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	releasetest.RunController(t, env, controller.Options{
		Namespace: env.Namespace, MetricsBindAddress: "0", CacheDir: t.TempDir(),
		Logger: logr.FromSlogHandler(slog.NewTextHandler(t.Output(), nil)),
	})
	// The account may do anything in the namespace but write ConfigMaps, which the chart makes.
	releasetest.ServiceAccount(t, env, "deployer",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets", "events", "pods", "services"}, Verbs: []string{"*"}},
		rbacv1.PolicyRule{APIGroups: []string{"apps", "batch", "coordination.k8s.io", "events.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	chart := berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {a: b}\n",
	})
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace}}
	rel.Spec.ServiceAccountName = "deployer"
	rel.Spec.Chart.Repository, rel.Spec.Chart.Name, rel.Spec.Chart.Version = releasetest.ServeCharts(t, chart), "web", "0.3.0"
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "web", "failed", func(rel *v1alpha1.Release) bool {
		s := releasetest.Condition(rel, controller.ConditionStalled)
		return s != nil && s.Status == metav1.ConditionTrue
	})

	// The cause stands: the attempt fails again, and the command says so.
	stdout, _, err := berthtest.Berth(t, env, "reconcile", "release", "web")
	var notReady *reconcile.NotReadyError
	if !errors.As(err, &notReady) || cli.ExitCode(err) == 0 {
		t.Fatalf("berth reconcile release of a Release that fails again: %v (exit %d), want a NotReadyError", err, cli.ExitCode(err))
	}
	if want := "Ready False " + notReady.Ready.Reason + ": " + notReady.Ready.Message + "\n"; stdout != want || notReady.Ready.Reason == "" {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "web", "read", func(*v1alpha1.Release) bool { return true })
	first := got.Status.LastHandledReconcileAt
	if first == "" || got.Annotations[v1alpha1.ReconcileRequestAnnotation] != first || len(got.Status.History) != 2 {
		t.Errorf("after the request: annotation %q, lastHandledReconcileAt %q, history %d; want the value handled and a second attempt",
			got.Annotations[v1alpha1.ReconcileRequestAnnotation], first, len(got.Status.History))
	}

	// The cause is fixed outside the spec: the request installs the Release.
	releasetest.ServiceAccount(t, env, "configmaps", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}})
	grant := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-configmaps", Namespace: env.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "configmaps"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: env.Namespace}},
	}
	if err := c.Create(t.Context(), grant); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := berthtest.Berth(t, env, "reconcile", "release", "web")
	if err != nil {
		t.Fatalf("berth reconcile release once the cause is fixed: %v\n%s", err, stderr)
	}
	if !strings.HasPrefix(stdout, "Ready True "+controller.ReasonInstallSucceeded+": ") {
		t.Errorf("stdout %q, want Ready True %s and its message", stdout, controller.ReasonInstallSucceeded)
	}
	got = releasetest.WaitFor(t, c, env.Namespace, "web", "read", func(*v1alpha1.Release) bool { return true })
	if got.Status.LastHandledReconcileAt == first || got.Status.Revision != 1 || got.Generation != 1 {
		t.Errorf("lastHandledReconcileAt %q (was %q), revision %d, generation %d; want a new value, revision 1, the spec unchanged",
			got.Status.LastHandledReconcileAt, first, got.Status.Revision, got.Generation)
	}
}

// TestReconcileReleaseRefusals: a Release that does not exist, or is suspended, is refused
// without waiting; a request no controller handles by --timeout is an UnhandledError, and
// --wait=false only asks.
func TestReconcileReleaseRefusals(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	if _, _, err := berthtest.Berth(t, env, "reconcile", "release", "absent"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("berth reconcile release of no Release: %v, want not found", err)
	}
	rel := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: env.Namespace}}
	rel.Spec.Chart.Repository, rel.Spec.Chart.Name, rel.Spec.Suspend = "https://charts.example.invalid", "web", true
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	_, _, err := berthtest.Berth(t, env, "reconcile", "release", "idle")
	var suspended *reconcile.SuspendedError
	if !errors.As(err, &suspended) || !strings.Contains(err.Error(), "spec.suspend to false") {
		t.Errorf("berth reconcile release of a suspended Release: %v, want a SuspendedError saying what to do", err)
	}
	// No controller runs: the request is not handled by the deadline, and the error says so.
	unserved := &v1alpha1.Release{ObjectMeta: metav1.ObjectMeta{Name: "unserved", Namespace: env.Namespace}}
	unserved.Spec.Chart.Repository, unserved.Spec.Chart.Name = "https://charts.example.invalid", "web"
	if err := c.Create(t.Context(), unserved); err != nil {
		t.Fatal(err)
	}
	_, _, err = berthtest.Berth(t, env, "reconcile", "release", "unserved", "--timeout", "1s")
	var unhandled *reconcile.UnhandledError
	if !errors.As(err, &unhandled) || unhandled.Handled != "" || !strings.Contains(err.Error(), "was not handled") || !strings.Contains(err.Error(), "berth doctor") {
		t.Errorf("berth reconcile release with no controller: %v, want an UnhandledError naming berth doctor", err)
	}
	if _, _, err := berthtest.Berth(t, env, "reconcile", "release", "unserved", "--wait=false"); err != nil {
		t.Errorf("berth reconcile release --wait=false: %v", err)
	}
}
