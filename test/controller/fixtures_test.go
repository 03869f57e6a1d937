package controller_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/controller/api/crds"
	"github.com/berthdev/berth/internal/controller/api/v1alpha1"
	"github.com/berthdev/berth/internal/testenv"
)

// waitTimeout bounds each wait for the controller.
const waitTimeout = 2 * time.Minute

// releaseClient installs the Release CRD (or finds it), waits until it is served, and returns a
// client of the controller's scheme.
func releaseClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(crds.Release, &crd); err != nil {
		t.Fatal(err)
	}
	crdClient := apiextensionsclient.NewForConfigOrDie(env.Config).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crdClient.Create(t.Context(), &crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("wait for CRD %s: %v", crd.Name, err)
	}
	scheme, err := controller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serviceAccount creates the ServiceAccount name in the test's namespace with the rules given,
// in a Role of the namespace: no right beyond them.
func serviceAccount(t *testing.T, env *testenv.Env, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx, ns := t.Context(), env.Namespace
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rbac := env.Client.RbacV1()
	if _, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// everything is every right (within a namespace, through a Role).
var everything = rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}

// waitFor waits until the Release name satisfies cond, and returns it.
func waitFor(t *testing.T, c client.Client, ns, name, what string, cond func(*v1alpha1.Release) bool) *v1alpha1.Release {
	t.Helper()
	var rel v1alpha1.Release
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rel); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(&rel), nil
	})
	if err != nil {
		out, _ := yaml.Marshal(rel.Status)
		t.Fatalf("wait until Release %s/%s %s: %v\nstatus:\n%s", ns, name, what, err, out)
	}
	return &rel
}

// waitGone waits until the Release name is gone.
func waitGone(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.Release{})), nil
	})
	if err != nil {
		var rel v1alpha1.Release
		_ = c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rel)
		out, _ := yaml.Marshal(rel.Status)
		t.Fatalf("wait until Release %s/%s is gone: %v\nstatus:\n%s", ns, name, err, out)
	}
}

// condition returns a condition of rel, or nil.
func condition(rel *v1alpha1.Release, t string) *metav1.Condition {
	for i := range rel.Status.Conditions {
		if rel.Status.Conditions[i].Type == t {
			return &rel.Status.Conditions[i]
		}
	}
	return nil
}

// readyAt says the Release is Ready for its current generation at revision.
func readyAt(revision int) func(*v1alpha1.Release) bool {
	return func(rel *v1alpha1.Release) bool {
		return isReady(rel) && rel.Status.Revision == revision
	}
}

// isReady says the Release is Ready for its current generation.
func isReady(rel *v1alpha1.Release) bool {
	c := condition(rel, controller.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == rel.Generation &&
		rel.Status.ObservedGeneration == rel.Generation
}

// releaseOf is a Release of the chart name 0.1.0 served by repoURL, with values, acting as
// serviceAccount.
func releaseOf(t *testing.T, ns, name, repoURL, chartName, serviceAccount, values string) *v1alpha1.Release {
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
