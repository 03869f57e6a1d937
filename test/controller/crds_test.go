package controller_test

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// gizmoChart is version of the chart gizmo: a CRD whose spec has the fields given, and a
// Deployment that selects its Pods by app=selector.
func gizmoChart(t *testing.T, group, version, selector string, fields ...string) string {
	crd := berthtest.CRD("Gizmo", group, "Namespaced", []string{"v1"}, fields...)
	return berthtest.VersionedChart(t, "gizmo", version, map[string]string{
		"crds/gizmo.yaml": crd,
		"templates/deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: gizmo}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata: {labels: {app: %[1]s}, annotations: {devcluster.berth.dev/start: "0s"}}
    spec: {containers: [{name: app, image: example.invalid/app}]}
`, selector),
	})
}

// crdRights lets the ServiceAccount account of the test's namespace manage CRDs, which are
// cluster-scoped, until the test ends.
func crdRights(t *testing.T, env *testenv.Env, account string) {
	t.Helper()
	rbac := env.Client.RbacV1()
	name := "crds-" + env.Namespace
	_, err := rbac.ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"*"}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = rbac.ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: env.Namespace}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// TestControllerReplacesCRDsAndImmutableObjects releases a chart through a Release with
// spec.upgrade.crds CreateReplace and spec.upgrade.force, then moves it to a chart version
// whose CRD gains a field and whose Deployment selects its Pods by another label: the upgrade
// updates the CRD in place and replaces the Deployment.
func TestControllerReplacesCRDsAndImmutableObjects(t *testing.T) {
	env := testenv.New(t)
	c := releasetest.Client(t, env)
	group := "gizmo-" + berthtest.Suffix(env) + ".example.com"
	crdName := "gizmos." + group
	crds := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crdName, metav1.DeleteOptions{}) })
	repo := berthtest.NewChartRepo(t, berthtest.ChartRepoOptions{},
		gizmoChart(t, group, "0.1.0", "one", "size"), gizmoChart(t, group, "0.2.0", "two", "size", "color"))
	releasetest.Deployer(t, env, "deployer")
	crdRights(t, env, "deployer")

	ctl := newController(t, env)
	ctl.start()
	rel := releaseOf(t, env.Namespace, "gizmo", repo.URL, "gizmo", "deployer", "{}")
	rel.Spec.Upgrade = &v1alpha1.UpgradeSpec{CRDs: v1alpha1.CRDsCreateReplace, Force: true}
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := releasetest.WaitFor(t, c, env.Namespace, "gizmo", "is installed", readyAt(1))
	installedCRD, err := crds.Get(t.Context(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the install did not create the CRD from crds/: %v", err)
	}
	installed, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "gizmo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"chart":{"version":"0.2.0"}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	releasetest.WaitFor(t, c, env.Namespace, "gizmo", "is upgraded", readyAt(2))

	crd, err := crds.Get(t.Context(), crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["color"]; !ok || crd.UID != installedCRD.UID {
		t.Errorf("CRD %s (UID %s, was %s) has no field color, want it updated in place", crdName, crd.UID, installedCRD.UID)
	}
	d, err := env.Client.AppsV1().Deployments(env.Namespace).Get(t.Context(), "gizmo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.UID == installed.UID || d.Spec.Selector.MatchLabels["app"] != "two" {
		t.Errorf("Deployment gizmo: UID %s (was %s), selector %v; want it created again, selecting app=two", d.UID, installed.UID, d.Spec.Selector.MatchLabels)
	}
	ctl.running()
}
