package controllerchart

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

// impersonateNeed is the right to act as a Release's ServiceAccount.
var impersonateNeed = need{"", "serviceaccounts", "impersonate", "deployer"}

// TestTemplateImpersonateNamespaces: by default the controller may impersonate every
// ServiceAccount of the cluster (its ClusterRole); with impersonateNamespaces it may in those
// namespaces alone, by one Role and RoleBinding in each, and its ClusterRole grants it nowhere,
// while it still reads every ServiceAccount.
func TestTemplateImpersonateNamespaces(t *testing.T) {
	objs := renderChart(t)
	rules := find[rbacv1.ClusterRole](t, objs, "ClusterRole", "", "ctl-berth-controller").Rules
	if !allows(rules, impersonateNeed) {
		t.Error("by default the ClusterRole does not grant impersonate on ServiceAccounts")
	}

	objs = renderChart(t, "--set", "impersonateNamespaces={team-a,team-b}")
	rules = find[rbacv1.ClusterRole](t, objs, "ClusterRole", "", "ctl-berth-controller").Rules
	if allows(rules, impersonateNeed) {
		t.Errorf("with impersonateNamespaces the ClusterRole grants impersonate cluster-wide: %+v", rules)
	}
	for _, verb := range []string{"get", "list", "watch"} {
		if !allows(rules, need{"", "serviceaccounts", verb, "deployer"}) {
			t.Errorf("with impersonateNamespaces the ClusterRole does not allow %s on ServiceAccounts", verb)
		}
	}
	for _, ns := range []string{"team-a", "team-b"} {
		role := find[rbacv1.Role](t, objs, "Role", ns, "ctl-berth-controller-impersonate")
		if !allows(role.Rules, impersonateNeed) || len(role.Rules) != 1 || len(role.Rules[0].Verbs) != 1 {
			t.Errorf("Role %s/%s: %+v, want impersonate on ServiceAccounts alone", ns, role.Name, role.Rules)
		}
		b := find[rbacv1.RoleBinding](t, objs, "RoleBinding", ns, "ctl-berth-controller-impersonate")
		if b.RoleRef.Kind != "Role" || b.RoleRef.Name != role.Name || len(b.Subjects) != 1 ||
			b.Subjects[0].Name != "ctl-berth-controller" || b.Subjects[0].Namespace != "berth-system" {
			t.Errorf("RoleBinding %s/%s: %+v %+v, want the Role bound to the controller's account", ns, b.Name, b.RoleRef, b.Subjects)
		}
	}
	roles := 0
	for _, o := range objs {
		if o.GetKind() == "Role" && o.GetName() == "ctl-berth-controller-impersonate" {
			roles++
		}
	}
	if roles != 2 {
		t.Errorf("%d impersonate Roles rendered, want one in each of the 2 namespaces listed", roles)
	}
}

// TestChartImpersonatesListedNamespacesOnly installs the chart with impersonateNamespaces listing
// one namespace: the controller, run as the chart's account, releases a Release there, and a
// Release of another namespace fails, ImpersonationForbidden, saying what to set.
func TestChartImpersonatesListedNamespacesOnly(t *testing.T) {
	env := testenv.New(t)
	apps, others := testenv.New(t), testenv.New(t)
	name := "ctl-" + berthtest.Suffix(env)
	full := name + "-berth-controller"
	berthtest.MustBerth(t, env, "install", name, chartDir(t), "--set", "impersonateNamespaces={"+apps.Namespace+"}", "--wait", "--timeout", "2m")
	waitForCRD(t, env)
	d := waitForDeployment(t, env, full)
	if _, err := env.Client.RbacV1().RoleBindings(apps.Namespace).Get(t.Context(), full+"-impersonate", metav1.GetOptions{}); err != nil {
		t.Errorf("RoleBinding %s/%s-impersonate: %v", apps.Namespace, full, err)
	}

	stop := runChartController(t, env, d)
	releaseLifecycle(t, env, apps.Namespace)

	deployer(t, env, others.Namespace, "deployer")
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{}, berthtest.WriteChart(t, "hello", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hello}\ndata: {greeting: hello}\n",
	}))
	var rel v1alpha1.Release
	if err := yaml.Unmarshal([]byte(`
apiVersion: berth.dev/v1alpha1
kind: Release
metadata: {name: hello, namespace: `+others.Namespace+`}
spec:
  serviceAccountName: deployer
  chart: {repository: "`+repo.URL+`", name: hello}
`), &rel); err != nil {
		t.Fatal(err)
	}
	c := releaseClient(t, env)
	if err := c.Create(t.Context(), &rel); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(&rel)
	waitUntil(t, "Release "+key.String()+" fails", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &rel); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(rel.Status.Conditions, controller.ConditionReady)
		return ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason != "Progressing", nil
	})
	ready := meta.FindStatusCondition(rel.Status.Conditions, controller.ConditionReady)
	if ready.Reason != controller.ReasonImpersonationForbidden || !strings.Contains(ready.Message, "impersonate") {
		t.Errorf("Release %s: Ready %s %q, want %s", key, ready.Reason, ready.Message, controller.ReasonImpersonationForbidden)
	}
	if len(rel.Status.Blockers) != 1 || !strings.Contains(rel.Status.Blockers[0].Next, "impersonateNamespaces") {
		t.Errorf("Release %s: blockers %+v, want one saying to list the namespace in impersonateNamespaces", key, rel.Status.Blockers)
	}
	berthtest.AssertNoObject(t, others, "v1", "ConfigMap", "hello")

	// Never released, it goes at once.
	if err := c.Delete(t.Context(), &rel); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "Release "+key.String()+" is gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, &v1alpha1.Release{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	stop()
	berthtest.MustBerth(t, env, "uninstall", name, "--wait")
}
