package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/releasetest"
)

// TestTerminatingNamespaceActsAsNoStaleAccount: a Release installed as its account names, once
// installed, an account that does not exist and whose ClusterRoleBinding (cluster-admin)
// outlived it; its namespace is then deleted. The uninstall does not act as that account: the
// Release is let go, its condition saying the account was never the release's.
func TestTerminatingNamespaceActsAsNoStaleAccount(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	ctx := t.Context()
	ns := env.Namespace
	deployer(t, env, "deployer")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ghost", Namespace: ns}},
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), binding.Name, metav1.DeleteOptions{})
	})
	rel := smallestRelease(t, ns, releasetest.ServeCharts(t, hookChart(t, "succeed")), "deployer")
	if err := c.Create(ctx, rel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, ns, "web", "is installed", readyAt(1))
	patch := []byte(`{"spec":{"serviceAccountName":"ghost"}}`)
	if err := c.Patch(ctx, rel, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, ns, "web", "says its account does not exist", notReadyWith(controller.ReasonServiceAccountNotFound))

	w, err := env.Resource(t, "berth.dev/v1alpha1", "Release").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := env.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var reported string
	timeout := time.After(waitTimeout)
	for done := false; !done; {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of Releases ended before the Release was gone")
			}
			if e.Type == watch.Deleted {
				done = true
				continue
			}
			u, ok := e.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == controller.ConditionReady && m["reason"] == controller.ReasonNamespaceTerminating {
					reported, _ = m["message"].(string)
				}
			}
		case <-timeout:
			t.Fatal("the Release was not let go")
		}
	}
	for _, want := range []string{"ServiceAccount " + ns + "/ghost does not exist", "never impersonated", "is not uninstalled"} {
		if !strings.Contains(reported, want) {
			t.Errorf("Ready condition before the Release went: %q, want reason %s saying %q", reported, controller.ReasonNamespaceTerminating, want)
		}
	}
}
