package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berthdev/berth/api/v1alpha1"
	"github.com/berthdev/berth/internal/controller"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
	"github.com/berthdev/berth/test/releasetest"
)

// deadConfigMapWebhook creates a MutatingWebhookConfiguration whose one webhook (failurePolicy
// Fail) calls a service that does not exist, on op (CREATE by default) of ConfigMaps in the
// test's namespace alone (other tests' namespaces share the cluster), and deletes it when the
// test ends. It returns the configuration's name.
func deadConfigMapWebhook(t *testing.T, env *testenv.Env, op ...string) string {
	t.Helper()
	name := "dead-" + env.Namespace
	ops := "CREATE"
	if len(op) > 0 {
		ops = op[0]
	}
	env.Apply(t, deadWebhookYAML("MutatingWebhookConfiguration", name, "dead", env.Namespace, ops, ""))
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// deadWebhookYAML is a webhook configuration of kind named name whose one webhook (name.berth.example.com,
// failurePolicy Fail) calls a service that does not exist, on ops of ConfigMaps in namespace
// alone, with the webhook's extra fields (a line of YAML) if any.
func deadWebhookYAML(kind, name, webhook, namespace, ops, extra string) string {
	y := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: %[1]s
metadata: {name: %[2]s}
webhooks:
- name: %[3]s.berth.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig: {service: {namespace: %[4]s, name: nobody-home}}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[4]s}}
  rules: [{operations: [%[5]s], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}]
`, kind, name, webhook, namespace, ops)
	if extra != "" {
		y += "  " + extra + "\n"
	}
	return y
}

// mayReadWebhooks lets ServiceAccount account of the test's namespace list webhook
// configurations, which are cluster-scoped, until the test ends.
func mayReadWebhooks(t *testing.T, env *testenv.Env, account string) {
	t.Helper()
	ctx := t.Context()
	name := "read-webhooks-" + env.Namespace
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"admissionregistration.k8s.io"},
			Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"}, Verbs: []string{"get", "list"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: env.Namespace}},
	}
	if _, err := env.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = env.Client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// TestReleasePreflightBlocksADeadWebhook: a dead webhook would intercept the creation of the
// chart's ConfigMap. The controller's preflight, run as the Release's account (which may read
// webhook configurations), stops the install before anything changes: Ready=False with reason
// PreflightBlocked naming the webhook and the ConfigMap, well before the Release's timeout (5m),
// and neither the ConfigMap nor a release record exists. Once the webhook is gone, a change of
// the Release installs it.
func TestReleasePreflightBlocksADeadWebhook(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	ns := env.Namespace
	deployer(t, env, "deployer")
	mayReadWebhooks(t, env, "deployer")
	webhook := deadConfigMapWebhook(t, env)

	rel := smallestRelease(t, ns, releasetest.ServeCharts(t, webChart(t)), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	// waitTimeout (2m) is under the Release's timeout: the preflight did not wait for it.
	got := waitFor(t, c, ns, "web", "is blocked by its preflight", notReadyWith(controller.ReasonPreflightBlocked))
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{"nothing was changed", "MutatingWebhookConfiguration.admissionregistration.k8s.io/" + webhook,
		"dead.berth.example.com", "CREATE of ConfigMap/" + ns + "/web-config", "spec.skipPreflight"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message does not say %q:\n%s", want, msg)
		}
	}
	if b := got.Status.Blockers; len(b) != 1 || b[0].Kind != "webhook" || !strings.Contains(b[0].Object, webhook) || b[0].Next == "" {
		t.Errorf("blockers: %+v, want the webhook %s", b, webhook)
	}
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
	berthtest.AssertNoRecords(t, env)

	if err := env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(t.Context(), webhook, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"values":{"replicas":3}}}`))
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, ns, "web", "is installed once the webhook is gone", readyAt(1))
}

// TestReleaseSkipPreflight: with spec.skipPreflight, the same install goes on past the preflight
// and meets the dead webhook itself: it fails as the API server refuses it (InstallFailed, its
// Event naming the webhook), not with PreflightBlocked, and still creates nothing.
func TestReleaseSkipPreflight(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	ns := env.Namespace
	deployer(t, env, "deployer")
	mayReadWebhooks(t, env, "deployer")
	deadConfigMapWebhook(t, env)

	rel := smallestRelease(t, ns, releasetest.ServeCharts(t, webChart(t)), "deployer")
	rel.Spec.SkipPreflight = true
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, ns, "web", "has failed", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason != controller.ReasonProgressing && rel.Status.ObservedGeneration == rel.Generation
	})
	if r := condition(got, controller.ConditionReady); r.Reason != controller.ReasonInstallFailed {
		t.Errorf("Ready: %s: %s, want %s", r.Reason, r.Message, controller.ReasonInstallFailed)
	}
	waitForEvent(t, env, controller.ReasonInstallFailed, `failed calling webhook "dead.berth.example.com"`)
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
}

// TestReleasePreflightLeavesOutWhatTheAccountMayNotRead: an account whose rights end at its
// namespace may not list webhook configurations or APIServices, nor get its namespace. A webhook
// that fails closed may be called for the install's ConfigMap as far as the controller can tell
// (its matchCondition reads who the request is from), so the preflight reads as the account: it
// leaves those checks out, says so in a Normal Event, and the Release is installed (the API
// server does not call the webhook for it).
func TestReleasePreflightLeavesOutWhatTheAccountMayNotRead(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	deployer(t, env, "deployer")
	env.Apply(t, deadWebhookYAML("ValidatingWebhookConfiguration", "nobody-"+env.Namespace, "nobody", env.Namespace, "CREATE",
		`matchConditions: [{name: nobody, expression: 'request.userInfo.username == "nobody"'}]`))
	t.Cleanup(func() {
		_ = env.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "nobody-"+env.Namespace, metav1.DeleteOptions{})
	})
	rel := smallestRelease(t, env.Namespace, releasetest.ServeCharts(t, webChart(t)), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, env.Namespace, "web", "is installed", readyAt(1))
	waitForEvent(t, env, controller.ReasonPreflightIncomplete, "MutatingWebhookConfiguration.admissionregistration.k8s.io")
	waitForEvent(t, env, controller.ReasonPreflightIncomplete, "APIService.apiregistration.k8s.io")
}

// TestReleasePreflightBlocksAnUninstall: a dead webhook would intercept the deletion of the
// release's ConfigMap. Deleting the Release runs the uninstall's preflight, which stops it
// before anything is deleted (PreflightBlocked, the ConfigMap and the record still there); once
// the webhook is gone, the uninstall is tried again by itself and the Release goes.
func TestReleasePreflightBlocksAnUninstall(t *testing.T) {
	env := testenv.New(t)
	c := startController(t, env)
	ns := env.Namespace
	deployer(t, env, "deployer")
	mayReadWebhooks(t, env, "deployer")
	rel := smallestRelease(t, ns, releasetest.ServeCharts(t, webChart(t)), "deployer")
	if err := c.Create(t.Context(), rel); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, c, ns, "web", "is installed", readyAt(1))
	webhook := deadConfigMapWebhook(t, env, "DELETE")

	if err := c.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, c, ns, "web", "has its uninstall blocked by its preflight", func(rel *v1alpha1.Release) bool {
		r := condition(rel, controller.ConditionReady)
		return r != nil && r.Status == metav1.ConditionFalse && r.Reason == controller.ReasonPreflightBlocked
	})
	msg := condition(got, controller.ConditionReady).Message
	for _, want := range []string{"uninstall of release web", webhook, "DELETE of ConfigMap/" + ns + "/web-config", "tried again by itself"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Ready message does not say %q:\n%s", want, msg)
		}
	}
	assertReplicas(t, env, "2")
	if record := berthtest.LastRecord(t, env, "web"); record.Version != 1 {
		t.Errorf("record: revision %d, want 1", record.Version)
	}

	if err := env.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(t.Context(), webhook, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Release is gone", func() bool {
		return apierrors.IsNotFound(c.Get(t.Context(), client.ObjectKeyFromObject(got), &v1alpha1.Release{}))
	})
	berthtest.AssertNoObject(t, env, "v1", "ConfigMap", "web-config")
}

// TestClusterViewNeedsItsRights: the controller watches what a preflight reads only when it may
// list and watch all of it; an identity whose rights end at its namespace is told which kind it
// may not watch.
func TestClusterViewNeedsItsRights(t *testing.T) {
	env := testenv.New(t)
	if err := controller.MayWatchClusterViewForTest(env.Config); err != nil {
		t.Errorf("the cluster's administrator may not watch the cluster view: %v", err)
	}
	deployer(t, env, "deployer")
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + env.Namespace + ":deployer"}
	err := controller.MayWatchClusterViewForTest(cfg)
	var refused *controller.ClusterViewUnavailableError
	if !errors.As(err, &refused) || refused.Err != nil || refused.Resource.Resource != "validatingwebhookconfigurations" {
		t.Fatalf("an account of one namespace: %v, want it refused the watch of validatingwebhookconfigurations", err)
	}
	if want := "the controller may not list and watch validatingwebhookconfigurations.admissionregistration.k8s.io"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
