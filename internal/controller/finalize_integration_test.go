package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// hookChart is a chart with a ConfigMap and a pre-delete hook Job whose Pods end as outcome
// says (succeed or fail).
func hookChart(t *testing.T, outcome string) string {
	return berthtest.PackageNewChart(t, "web", "0.3.0", map[string]string{
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
		"templates/drain.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: web-drain
  annotations: {helm.sh/hook: pre-delete}
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations: {devcluster.berth.dev/outcome: ` + outcome + `, devcluster.berth.dev/log: "draining: queue busy"}
    spec:
      restartPolicy: Never
      containers: [{name: drain, image: example.invalid/drain}]
`,
	})
}

// C1: a pre-delete hook that can never succeed holds the Release, named in its status and
// events, until uninstall.disableHooks is set on the Release being deleted.
func TestReleaseFailingPreDeleteHookHoldsUntilHooksAreDisabled(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, hookChart(t, "fail")), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if err := c.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, env.Namespace, "web", "names the failing hook", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Reason == controller.ReasonHookFailed
	})
	if len(got.Status.Blockers) != 1 || got.Status.Blockers[0].Kind != "hook" || !strings.Contains(got.Status.Blockers[0].Object, "web-drain") ||
		!strings.Contains(got.Status.Blockers[0].Message, "pre-delete") || !strings.Contains(got.Status.Blockers[0].Message, "last Pod web-drain-") ||
		got.Status.Blockers[0].LogTail != "" {
		// Its logs can print the values: the controller shows them only with --status-chart-output.
		t.Errorf("blockers: %+v, want the pre-delete hook Job web-drain with its last Pod's state, without its logs", got.Status.Blockers)
	}
	if h := got.Status.History; len(h) == 0 || h[0].Operation != "uninstall" || h[0].Outcome != "Failed" {
		t.Errorf("history: %+v, want a failed uninstall first", h)
	}
	if r := condition(got, controller.ConditionStalled); r != nil {
		t.Errorf("Stalled condition %+v: a failed uninstall is tried again", r)
	}
	// Nothing of the release was deleted.
	assertReplicas(t, env, "2")
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 1 {
		t.Errorf("record: revision %d, want 1", record.Version)
	}
	waitUntil(t, "a warning event names the hook", func() bool {
		list, err := env.Client.EventsV1().Events(env.Namespace).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Release" && e.Reason == controller.ReasonHookFailed && strings.Contains(e.Note, "pre-delete hook") && strings.Contains(e.Note, "/web-drain") {
				return true
			}
		}
		return false
	})

	// The way out: hooks disabled on the Release being deleted.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"uninstall":{"disableHooks":true}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Release is gone", func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(got), &v1alpha1.Release{}))
	})
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)
}

// C3: the namespace of a Release and its release is deleted; its pre-delete hook can no longer be
// created there, and the namespace still goes.
func TestReleaseInDeletedNamespaceLetsItGo(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, hookChart(t, "succeed")), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	if err := env.Client.CoreV1().Namespaces().Delete(t.Context(), env.Namespace, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the namespace is gone", func() bool {
		_, err := env.Client.CoreV1().Namespaces().Get(t.Context(), env.Namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// C3 with an account whose rights outlive the namespace (a ClusterRoleBinding), and records that
// a finalizer holds while the namespace terminates: the uninstall runs, the hooks it can no
// longer create there are skipped and reported, and the Release goes.
func TestReleaseInDeletedNamespaceSkipsHooksItCannotCreate(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	ctx := t.Context()
	ns := env.Namespace
	if _, err := env.Client.CoreV1().ServiceAccounts(ns).Create(ctx, serviceAccount("deployer"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deployer-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}},
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

	secrets := env.Client.CoreV1().Secrets(ns)
	records, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(records.Items) == 0 {
		t.Fatalf("records of web: %v", err)
	}
	hold := func(finalizers string) {
		for _, s := range records.Items {
			patch := []byte(`{"metadata":{"finalizers":` + finalizers + `}}`)
			if _, err := secrets.Patch(context.WithoutCancel(ctx), s.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("patch the finalizers of %s: %v", s.Name, err)
			}
		}
	}
	hold(`["example.com/hold"]`)
	t.Cleanup(func() { hold(`null`) })

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
	if !strings.Contains(reported, "pre-delete hook") || !strings.Contains(reported, "web-drain") {
		t.Errorf("Ready condition before the Release went: %q, want reason %s naming the skipped pre-delete hook web-drain", reported, controller.ReasonNamespaceTerminating)
	}
	if _, err := env.Client.BatchV1().Jobs(ns).Get(ctx, "web-drain", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("hook Job web-drain: %v, want it never created", err)
	}
	for _, s := range records.Items {
		got, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
		if err == nil && got.DeletionTimestamp.IsZero() {
			t.Errorf("record %s is not deleted", s.Name)
		}
	}
	hold(`null`)
	waitUntil(t, "the namespace is gone", func() bool {
		_, err := env.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}
