//go:build sharedcharts

package e2e

import (
	"strings"
	"testing"

	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/internal/release"
	"github.com/berthdev/berth/internal/testenv"
	"github.com/berthdev/berth/test/berthtest"
)

func TestIngressNginxWithHooks(t *testing.T) {
	t.Parallel()
	env := testenv.New(t)
	chart := berthtest.SharedChart(t, "ingress-nginx")
	name := "nginx-" + berthtest.Suffix(env)
	ctx := t.Context()

	assertNoHookJobs := func(step string) {
		t.Helper()
		jobs, err := env.Client.BatchV1().Jobs(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs.Items {
			t.Errorf("after %s: hook Job %s remains (its policy is hook-succeeded)", step, j.Name)
		}
	}
	for _, step := range [][]string{
		{"install", name, chart, "--wait"},
		{"upgrade", name, chart, "--wait", "--set", "controller.replicaCount=2"},
	} {
		_, stderr := berthtest.MustBerth(t, env, step...)
		for _, hook := range []string{"admission-create: started", "admission-patch: started"} {
			if !strings.Contains(stderr, hook) {
				t.Errorf("%s: the progress does not show the hook Job %s:\n%s", step[0], hook, stderr)
			}
		}
		assertNoHookJobs(step[0])
		for _, h := range berthtest.LastRecord(t, env, name).Hooks {
			if h.Kind == "Job" && h.LastRun.Phase != releasev1.HookPhaseSucceeded {
				t.Errorf("%s: hook Job %s recorded as %q, want Succeeded", step[0], h.Name, h.LastRun.Phase)
			}
		}
	}

	// Uninstall removes the cluster-scoped objects too.
	rel := berthtest.LastRecord(t, env, name)
	berthtest.MustBerth(t, env, "uninstall", name)
	for _, c := range []struct{ apiVersion, kind, name string }{
		{"rbac.authorization.k8s.io/v1", "ClusterRole", name + "-ingress-nginx"},
		{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", name + "-ingress-nginx"},
		{"networking.k8s.io/v1", "IngressClass", "nginx"},
		{"admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", name + "-ingress-nginx-admission"},
	} {
		if !strings.Contains(rel.Manifest, "name: "+c.name) {
			continue // not part of this chart's manifest: nothing to check
		}
		berthtest.AssertNoObject(t, env, c.apiVersion, c.kind, c.name)
	}
	pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		t.Errorf("after uninstall, %d Pods remain", len(pods.Items))
	}
	if _, err := release.NewSecretStore(env.Client.CoreV1(), env.Namespace).Last(ctx, name); err == nil {
		t.Errorf("after uninstall, release %s is still recorded", name)
	}
}
