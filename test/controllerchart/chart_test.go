package controllerchart

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// TestChartInstalledWithBerth installs the chart with berth, watching every namespace: the CRD is
// Established, the Deployment Available, the controller's rights cluster-wide; the controller,
// run as the chart's ServiceAccount with the Deployment's arguments, releases and uninstalls a
// Release of another namespace. berth uninstall then removes everything but the CRD, as Helm does
// with crds/.
func TestChartInstalledWithBerth(t *testing.T) {
	env := testenv.New(t)
	name := "ctl-" + berthtest.Suffix(env)
	full := name + "-berth-controller"
	berthtest.MustBerth(t, env, "install", name, chartDir(t), "--wait", "--timeout", "2m")

	waitForCRD(t, env)
	d := waitForDeployment(t, env, full)
	if got := d.Spec.Template.Spec.ServiceAccountName; got != full {
		t.Errorf("the Deployment runs as ServiceAccount %q, want %q", got, full)
	}
	assertObjects(t, env, full)
	assertBinding(t, env, "ClusterRoleBinding", "", full, "ClusterRole", full)
	assertBinding(t, env, "RoleBinding", env.Namespace, full+"-leader-election", "Role", full+"-leader-election")

	apps := testenv.New(t)
	stop := runChartController(t, env, d)
	releaseLifecycle(t, env, apps.Namespace)
	if _, err := env.Client.CoordinationV1().Leases(env.Namespace).Get(t.Context(), controller.Name+".berth.dev", metav1.GetOptions{}); err != nil {
		t.Errorf("leader election Lease in the controller's namespace: %v", err)
	}
	stop()

	berthtest.MustBerth(t, env, "uninstall", name, "--wait")
	if _, err := env.Client.RbacV1().ClusterRoles().Get(t.Context(), full, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s after uninstall: %v, want it gone", full, err)
	}
	if _, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), full, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Deployment %s after uninstall: %v, want it gone", full, err)
	}
	waitForCRD(t, env)
}

// TestChartInstalledWithHelm installs the chart with Helm, watching one namespace other than its
// own: the controller's rights are a Role there (and its leader election Role at home), no
// ClusterRole; the controller, run as the chart's ServiceAccount with the Deployment's arguments,
// releases and uninstalls a Release of the watched namespace. berth sees the release Helm made.
func TestChartInstalledWithHelm(t *testing.T) {
	env := testenv.New(t)
	apps := testenv.New(t)
	name := "ctl-" + berthtest.Suffix(env)
	full := name + "-berth-controller"
	berthtest.MustHelm(t, env, "install", name, chartDir(t), "--set", "watchNamespace="+apps.Namespace, "--wait", "--timeout", "2m")

	waitForCRD(t, env)
	d := waitForDeployment(t, env, full)
	assertObjects(t, env, full)
	assertBinding(t, env, "RoleBinding", apps.Namespace, full, "Role", full)
	assertBinding(t, env, "RoleBinding", env.Namespace, full+"-leader-election", "Role", full+"-leader-election")
	if _, err := env.Client.RbacV1().ClusterRoles().Get(t.Context(), full, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s with watchNamespace set: %v, want none", full, err)
	}
	if out, _ := berthtest.MustBerth(t, env, "list"); !strings.Contains(out, name) {
		t.Errorf("berth list does not show the release Helm installed:\n%s", out)
	}

	stop := runChartController(t, env, d)
	releaseLifecycle(t, env, apps.Namespace)
	stop()

	berthtest.MustHelm(t, env, "uninstall", name, "--wait")
	if _, err := env.Client.RbacV1().Roles(apps.Namespace).Get(t.Context(), full, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Role %s/%s after uninstall: %v, want it gone", apps.Namespace, full, err)
	}
}

// assertObjects checks the chart's ServiceAccount and metrics Service.
func assertObjects(t *testing.T, env *testenv.Env, full string) {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Client.CoreV1().ServiceAccounts(env.Namespace).Get(ctx, full, metav1.GetOptions{}); err != nil {
		t.Errorf("ServiceAccount: %v", err)
	}
	svc, err := env.Client.CoreV1().Services(env.Namespace).Get(ctx, full+"-metrics", metav1.GetOptions{})
	if err != nil {
		t.Errorf("metrics Service: %v", err)
		return
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != "metrics" || svc.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("metrics Service ports: %+v, want one to the container port named metrics", svc.Spec.Ports)
	}
}

// assertBinding checks that the binding kind/ns/name exists, refers to roleKind/roleName and binds
// the chart's ServiceAccount.
func assertBinding(t *testing.T, env *testenv.Env, kind, ns, name, roleKind, roleName string) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	var ref rbacv1.RoleRef
	var subjects []rbacv1.Subject
	switch kind {
	case "ClusterRoleBinding":
		b, err := env.Client.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("ClusterRoleBinding %s: %v", name, err)
			return
		}
		ref, subjects = b.RoleRef, b.Subjects
		if _, err := env.Client.RbacV1().ClusterRoles().Get(ctx, roleName, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v", roleName, err)
		}
	default:
		b, err := env.Client.RbacV1().RoleBindings(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("RoleBinding %s/%s: %v", ns, name, err)
			return
		}
		ref, subjects = b.RoleRef, b.Subjects
		if _, err := env.Client.RbacV1().Roles(ns).Get(ctx, roleName, metav1.GetOptions{}); err != nil {
			t.Errorf("Role %s/%s: %v", ns, roleName, err)
		}
	}
	if ref.Kind != roleKind || ref.Name != roleName {
		t.Errorf("%s %s refers to %s %s, want %s %s", kind, name, ref.Kind, ref.Name, roleKind, roleName)
	}
	sa := strings.TrimSuffix(roleName, "-leader-election")
	if len(subjects) != 1 || subjects[0].Kind != rbacv1.ServiceAccountKind || subjects[0].Name != sa || subjects[0].Namespace != env.Namespace {
		t.Errorf("%s %s binds %+v, want ServiceAccount %s/%s", kind, name, subjects, env.Namespace, sa)
	}
}
